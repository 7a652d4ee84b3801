// Runs Pulsar's own split triggers on JSON cases: the reference data for lb_pipeline.algorithms.splits.triggers.
// The pulsar-oracle has no family for them (they take a live PulsarService): here the broker's services are subclasses
// created without running their constructors (sun.misc.Unsafe.allocateInstance), answering only what the trigger asks.
// Run by `make conformance` against the oracle's class path:
//   java -cp .oracle/4.0.8/pulsar-oracle.jar tests/conformance/java/SplitTriggers.java case.json [more.json ...]
//
// The modular trigger, BundleSplitterTask.findBundlesToSplit (a case without "broker"): {"name", "config": {key:
// value}, "brokers": {broker: LocalBrokerData JSON}, "bundleData": {bundle: BundleData JSON}, "bundleCounts":
// {namespace: count}, "cycles": n}; the leader reads LocalBrokerData and BundleData from the metadata store with
// Jackson, and so does this harness. Output: {"case", "cycles": [[[bundle, broker], ...] in the result map's order,
// per cycle]}.
//
// The extensible trigger, DefaultNamespaceBundleSplitStrategyImpl.findBundlesToSplit on one owner broker behind
// SplitScheduler's gate (loadBalancerEnabled and loadBalancerAutoBundleSplitEnabled): {"name", "config", "broker",
// "topics": {bundle: [topic, ...]}, "cycles": [{"stats": {bundle: NamespaceBundleStats JSON}, "splitting": [bundle,
// ...], "bundleCounts": {namespace: count}}]}. BrokerService.getBundleStats is a ConcurrentHashMap, as PulsarStats
// keeps it; the service-unit channel and the broker registry are Proxies (bundles in the Splitting state; this broker
// owns every bundle of its stats); NamespaceService answers the topics of a bundle (topic_count_equally_divide). The
// split algorithm, the bundle factory's range checks and the strategy are Pulsar's. Output: {"case", "cycles":
// [[{"bundle", "label", "reason", "children": [range, range]}, ...] sorted by bundle, per cycle]}.
//
// Either trigger: a namespace without a count makes getBundleCount throw, as a failed lookup does; a case that throws
// gives {"case", "error"}.
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.common.hash.Hashing;
import java.io.File;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.pulsar.broker.PulsarService;
import org.apache.pulsar.broker.ServiceConfiguration;
import org.apache.pulsar.broker.loadbalance.LoadData;
import org.apache.pulsar.broker.loadbalance.LoadManager;
import org.apache.pulsar.broker.loadbalance.extensions.BrokerRegistry;
import org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl;
import org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerWrapper;
import org.apache.pulsar.broker.loadbalance.extensions.LoadManagerContext;
import org.apache.pulsar.broker.loadbalance.extensions.channel.ServiceUnitState;
import org.apache.pulsar.broker.loadbalance.extensions.channel.ServiceUnitStateChannel;
import org.apache.pulsar.broker.loadbalance.extensions.channel.ServiceUnitStateData;
import org.apache.pulsar.broker.loadbalance.extensions.models.SplitCounter;
import org.apache.pulsar.broker.loadbalance.extensions.models.SplitDecision;
import org.apache.pulsar.broker.loadbalance.extensions.scheduler.SplitScheduler;
import org.apache.pulsar.broker.loadbalance.extensions.strategy.DefaultNamespaceBundleSplitStrategyImpl;
import org.apache.pulsar.broker.loadbalance.impl.BundleSplitterTask;
import org.apache.pulsar.broker.namespace.NamespaceService;
import org.apache.pulsar.broker.service.BrokerService;
import org.apache.pulsar.common.naming.NamespaceBundle;
import org.apache.pulsar.common.naming.NamespaceBundleFactory;
import org.apache.pulsar.common.naming.NamespaceName;
import org.apache.pulsar.common.util.FieldParser;
import org.apache.pulsar.policies.data.loadbalancer.BrokerData;
import org.apache.pulsar.policies.data.loadbalancer.BundleData;
import org.apache.pulsar.policies.data.loadbalancer.LocalBrokerData;
import org.apache.pulsar.policies.data.loadbalancer.NamespaceBundleStats;
public class SplitTriggers {
    static final ObjectMapper MAPPER = new ObjectMapper().configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);

    static class Pulsar extends PulsarService {
        ServiceConfiguration conf;
        NamespaceService ns;
        BrokerService brokers;
        AtomicReference<LoadManager> loadManager;

        Pulsar() {
            super(null);
        }

        @Override public ServiceConfiguration getConfiguration() { return conf; }
        @Override public ServiceConfiguration getConfig() { return conf; }
        @Override public NamespaceService getNamespaceService() { return ns; }
        @Override public BrokerService getBrokerService() { return brokers; }
        @Override public AtomicReference<LoadManager> getLoadManager() { return loadManager; }
    }

    static class Brokers extends BrokerService {
        Map<String, NamespaceBundleStats> stats;

        Brokers() throws Exception {
            super(null, null);
        }

        @Override public Map<String, NamespaceBundleStats> getBundleStats() { return stats; }
    }

    static class Namespaces extends NamespaceService {
        JsonNode counts;
        JsonNode topics;
        NamespaceBundleFactory factory;

        Namespaces() throws Exception {
            super(null);
        }

        @Override public NamespaceBundleFactory getNamespaceBundleFactory() { return factory; }

        @Override
        public int getBundleCount(NamespaceName namespace) throws Exception {
            JsonNode n = counts.get(namespace.toString());
            if (n == null) {
                throw new IllegalStateException("no bundles known for " + namespace);
            }
            return n.asInt();
        }

        @Override
        public CompletableFuture<List<String>> getOwnedTopicListForNamespaceBundle(NamespaceBundle bundle) {
            List<String> names = new ArrayList<>();
            topics.path(bundle.toString()).forEach(t -> names.add(t.asText()));
            return CompletableFuture.completedFuture(names);
        }
    }

    static class Factory extends NamespaceBundleFactory {
        Factory() {
            super(null, null);
        }

        @Override public void invalidateBundleCache(NamespaceName namespace) {}  // no bundle cache here
    }

    @SuppressWarnings("unchecked")
    static <T> T allocate(Class<T> type) throws Exception {
        Field f = Class.forName("sun.misc.Unsafe").getDeclaredField("theUnsafe");
        f.setAccessible(true);
        Object unsafe = f.get(null);
        return (T) unsafe.getClass().getMethod("allocateInstance", Class.class).invoke(unsafe, type);
    }

    static void set(Object target, Class<?> owner, String name, Object value) throws Exception {
        Field f = owner.getDeclaredField(name);
        f.setAccessible(true);
        f.set(target, value);
    }

    static ServiceConfiguration config(JsonNode values) throws Exception {
        ServiceConfiguration conf = new ServiceConfiguration();
        for (Iterator<Map.Entry<String, JsonNode>> it = values.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            Field f = ServiceConfiguration.class.getDeclaredField(e.getKey());
            f.setAccessible(true);
            f.set(conf, FieldParser.value(e.getValue().asText(), f));  // as Pulsar reads broker.conf
        }
        return conf;
    }

    static <T> T proxy(Class<T> type, java.util.function.BiFunction<String, Object[], Object> answer) {
        return type.cast(Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type},
                (p, method, args) -> answer.apply(method.getName(), args)));
    }

    static ObjectNode runExtensible(JsonNode c) throws Exception {
        String broker = c.get("broker").asText();
        Pulsar pulsar = allocate(Pulsar.class);
        pulsar.conf = config(c.get("config"));
        Namespaces ns = allocate(Namespaces.class);
        set(ns, NamespaceService.class, "config", pulsar.conf);
        set(ns, NamespaceService.class, "pulsar", pulsar);
        ns.topics = c.path("topics");
        ns.factory = allocate(Factory.class);
        set(ns.factory, NamespaceBundleFactory.class, "hashFunc", Hashing.crc32());  // NamespaceService's own choice
        pulsar.ns = ns;
        Brokers brokers = allocate(Brokers.class);
        pulsar.brokers = brokers;
        Set<Map.Entry<String, ServiceUnitStateData>> ownership = new LinkedHashSet<>();
        ServiceUnitStateChannel channel = proxy(ServiceUnitStateChannel.class, (method, args) -> switch (method) {
            case "getOwnershipEntrySet" -> ownership;
            case "isOwner" -> true;
            default -> throw new UnsupportedOperationException(method);
        });
        ExtensibleLoadManagerImpl impl = allocate(ExtensibleLoadManagerImpl.class);
        set(impl, ExtensibleLoadManagerImpl.class, "serviceUnitStateChannel", channel);
        ExtensibleLoadManagerWrapper wrapper = allocate(ExtensibleLoadManagerWrapper.class);
        set(wrapper, ExtensibleLoadManagerWrapper.class, "loadManager", impl);
        pulsar.loadManager = new AtomicReference<>(wrapper);
        BrokerRegistry registry = proxy(BrokerRegistry.class, (method, args) -> broker);
        LoadManagerContext context = proxy(LoadManagerContext.class, (method, args) -> registry);

        SplitScheduler scheduler = allocate(SplitScheduler.class);  // runs the strategy only when its gate is open
        set(scheduler, SplitScheduler.class, "conf", pulsar.conf);
        Method enabled = SplitScheduler.class.getDeclaredMethod("isLoadBalancerAutoBundleSplitEnabled");
        enabled.setAccessible(true);
        DefaultNamespaceBundleSplitStrategyImpl strategy = new DefaultNamespaceBundleSplitStrategyImpl(new SplitCounter());
        ObjectNode out = MAPPER.createObjectNode();
        out.put("case", c.get("name").asText());
        ArrayNode cycles = out.putArray("cycles");
        for (JsonNode cycle : c.get("cycles")) {
            ConcurrentHashMap<String, NamespaceBundleStats> stats = new ConcurrentHashMap<>();
            for (Iterator<Map.Entry<String, JsonNode>> it = cycle.get("stats").fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                stats.put(e.getKey(), MAPPER.treeToValue(e.getValue(), NamespaceBundleStats.class));
            }
            brokers.stats = stats;
            ns.counts = cycle.get("bundleCounts");
            ownership.clear();
            for (JsonNode name : cycle.path("splitting")) {
                ownership.add(Map.entry(name.asText(),
                        new ServiceUnitStateData(ServiceUnitState.Splitting, broker, broker, null, false, 0L, 1L)));
            }
            ownership.add(Map.entry("other/owned/0x00000000_0xffffffff",  // not splitting: never a neighbour
                    new ServiceUnitStateData(ServiceUnitState.Owned, broker, null, null, false, 0L, 1L)));
            TreeMap<String, ObjectNode> picked = new TreeMap<>();
            Set<SplitDecision> decisions = (Boolean) enabled.invoke(scheduler)
                    ? strategy.findBundlesToSplit(context, pulsar) : Set.of();
            for (SplitDecision d : decisions) {
                ObjectNode o = MAPPER.createObjectNode();
                o.put("bundle", d.getSplit().serviceUnit());
                o.put("label", d.getLabel().toString());
                o.put("reason", d.getReason().toString());
                ArrayNode children = o.putArray("children");
                d.getSplit().splitServiceUnitToDestBroker().keySet().stream().sorted().forEach(children::add);
                picked.put(d.getSplit().serviceUnit(), o);
            }
            cycles.addArray().addAll(picked.values());
        }
        return out;
    }

    static ObjectNode runModular(JsonNode c) throws Exception {
        Pulsar pulsar = allocate(Pulsar.class);
        pulsar.conf = config(c.get("config"));
        Namespaces ns = allocate(Namespaces.class);
        ns.counts = c.get("bundleCounts");
        pulsar.ns = ns;
        LoadData data = new LoadData();
        for (Iterator<Map.Entry<String, JsonNode>> it = c.get("brokers").fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            data.getBrokerData().put(e.getKey(), new BrokerData(MAPPER.treeToValue(e.getValue(), LocalBrokerData.class)));
        }
        for (Iterator<Map.Entry<String, JsonNode>> it = c.get("bundleData").fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            data.getBundleData().put(e.getKey(), MAPPER.treeToValue(e.getValue(), BundleData.class));
        }
        BundleSplitterTask task = new BundleSplitterTask();
        ObjectNode out = MAPPER.createObjectNode();
        out.put("case", c.get("name").asText());
        ArrayNode cycles = out.putArray("cycles");
        for (int i = 0; i < c.path("cycles").asInt(1); i++) {  // the same task again: its maps are cleared each time
            ArrayNode picked = cycles.addArray();
            for (Map.Entry<String, String> e : task.findBundlesToSplit(data, pulsar).entrySet()) {
                picked.addArray().add(e.getKey()).add(e.getValue());
            }
        }
        return out;
    }

    public static void main(String[] args) throws Exception {
        PrintStream answers = System.out;
        System.setOut(System.err);  // Pulsar's log lines go to stderr
        for (String path : args) {
            JsonNode c = MAPPER.readTree(new File(path));
            ObjectNode out;
            try {
                out = c.has("broker") ? runExtensible(c) : runModular(c);
            } catch (Exception e) {
                out = MAPPER.createObjectNode();
                out.put("case", c.path("name").asText());
                out.put("error", e.toString());
            }
            answers.println(MAPPER.writeValueAsString(out));
        }
    }
}
