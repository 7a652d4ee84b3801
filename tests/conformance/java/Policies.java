// Runs Pulsar's own policy paths of broker selection on JSON cases: the reference data for the namespace isolation
// policies and anti-affinity groups of lb_pipeline.algorithms (shedding/selection.py, anti_affinity.py) and for
// TransferShedder.isTransferable (shedding/extensible_filters.py). The pulsar-oracle has no family for them: they
// read the cluster's policies through PulsarService's metadata store, and the oracle runs TransferShedder in its
// unit-test mode only (no PulsarService: every bundle transferable). Here the PulsarService is a subclass created
// without running its constructor (sun.misc.Unsafe.allocateInstance) whose PulsarResources are Pulsar's own, on an
// in-memory metadata store holding the case's policies as the JSON Pulsar keeps them: the isolation policies at
// /admin/clusters/<cluster>/namespaceIsolationPolicies, each namespace's local policies (its anti-affinity group)
// at /admin/local-policies/<namespace>, each failure domain at /admin/clusters/<cluster>/failureDomain/<domain>.
// Run by `make conformance` against the oracle's class path:
//   java -cp .oracle/4.0.8/pulsar-oracle.jar tests/conformance/java/Policies.java case.json [more.json ...]
//
// Family "policies": {"name", "config": {key: value} (clusterName, failureDomainsEnabled), "available": [broker,
// ...], "lookup": {broker: {"persistentTopicsEnabled", "nonPersistentTopicsEnabled"}} (the brokers with load
// data), "isolation": {name: NamespaceIsolationData JSON}, "groups": {namespace: anti-affinity group}, "domains":
// {domain: [broker, ...]}, "ownership": {bundle: broker}, "queries": [{"bundle", "current"}]}. Per query, as the
// modular leader asks (the brokers' namespace → bundle-range cache from the ownership of the brokers with load
// data, as the leader fills it from their reports) and as the extensible one does (the service-unit channel's
// entries, each Owned by its broker):
//   "isolation": LoadManagerShared.applyNamespacePolicies over the available brokers (sorted);
//   "anti_affinity_modular" / "anti_affinity_extensible": filterAntiAffinityGroupOwnedBrokers over the available
//     brokers, with the failure domains refreshBrokerToFailureDomainMap reads (sorted);
//   "should_unload_modular" / "should_unload_extensible": shouldAntiAffinityNamespaceUnload with the isolation
//     result as the candidates (ModularLoadManagerImpl.shouldAntiAffinityNamespaceUnload);
//   "modular_filters": the modular leader's filterBrokersWithLargeTopicCount over the available brokers, then its
//     BrokerLoadManagerClassFilter and BrokerVersionFilter on a LoadData of the brokers' LocalBrokerData
//     (sorted; "error" where the version filter throws);
//   "domains": the broker → failure domain map refreshed from the store.
// And "seeded": per "seeds" entry ({"bundle", "stored"?: BundleData, "quota"?: ResourceQuota, "sample":
// NamespaceBundleStats}), the BundleData getBundleDataOrDefault reads (the nodes put in the store first) after one
// update with the sample, as updateBundleData makes it of a bundle it had no data of.
// And "assigned": where ModularLoadManagerImpl.selectBrokerForAssignment puts the case's "assign" bundles one after
// the other (a ModularLoadManagerImpl whose available brokers are the case's, initialize()'s fields set from the
// case: its LoadData, policies, failure domains, bundle-range cache, filter pipeline and placement strategy).
// Output: one line per case, {"case", "queries": [...], "assigned": [broker or null, ...]}.
//
// Family "transfer-policies" (a case with a "kind"): TransferShedder as the extensible leader runs it, with the
// broker filter pipeline ExtensibleLoadManagerImpl builds (load-manager class, max topics, version, anti-affinity
// group, isolation policies) and its isolation and anti-affinity helpers. The load data store, top-bundles store,
// broker registry and configuration come from the oracle's own transfer family (its package-private prepare,
// called by reflection), so a case is the oracle's transfer case plus
//   "policies": {"isolation", "groups", "domains" (as above), "owned": {bundle: broker} (the service-unit channel's
//                Owned entries the anti-affinity filter counts), "lookup": {broker: {"loadManagerClassName",
//                "brokerVersion", "persistentTopicsEnabled", "nonPersistentTopicsEnabled"}} (BrokerLookupData)}
// and its config may name clusterName, failureDomainsEnabled, loadManagerClassName, loadBalancerBrokerMaxTopics,
// preferLaterVersions and loadBalancerSheddingBundlesWithPoliciesEnabled. Then ExtensibleLoadManagerImpl.selectAsync
// assigns the case's "assign" bundles on the last call's stores and registry (the same filter pipeline, then the
// extensible LeastResourceUsageWithWeight, which picks at random among its best brokers). Output: one line per case,
// {"case", "calls": [{"index", "decisions", "skip_reason"}], "assigned": [broker or null, ...]}, the calls as the
// oracle's transfer family writes them.
//
// A case that throws gives {"case", "error"}.
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
import java.nio.charset.StandardCharsets;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.pulsar.broker.PulsarService;
import org.apache.pulsar.broker.ServiceConfiguration;
import org.apache.pulsar.broker.loadbalance.BrokerFilterException;
import org.apache.pulsar.broker.loadbalance.LoadData;
import org.apache.pulsar.policies.data.loadbalancer.BrokerData;
import org.apache.pulsar.policies.data.loadbalancer.BundleData;
import org.apache.pulsar.policies.data.loadbalancer.LocalBrokerData;
import org.apache.pulsar.policies.data.loadbalancer.NamespaceBundleStats;
import org.apache.pulsar.broker.loadbalance.LoadManager;
import org.apache.pulsar.broker.loadbalance.ModularLoadManagerStrategy;
import org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl;
import org.apache.pulsar.broker.loadbalance.extensions.BrokerRegistry;
import org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl;
import org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerWrapper;
import org.apache.pulsar.broker.loadbalance.extensions.LoadManagerContext;
import org.apache.pulsar.broker.loadbalance.extensions.channel.ServiceUnitState;
import org.apache.pulsar.broker.loadbalance.extensions.channel.ServiceUnitStateChannel;
import org.apache.pulsar.broker.loadbalance.extensions.channel.ServiceUnitStateData;
import org.apache.pulsar.broker.loadbalance.extensions.data.BrokerLookupData;
import org.apache.pulsar.broker.loadbalance.extensions.filter.AntiAffinityGroupPolicyFilter;
import org.apache.pulsar.broker.loadbalance.extensions.filter.BrokerFilter;
import org.apache.pulsar.broker.loadbalance.extensions.filter.BrokerIsolationPoliciesFilter;
import org.apache.pulsar.broker.loadbalance.extensions.filter.BrokerLoadManagerClassFilter;
import org.apache.pulsar.broker.loadbalance.extensions.filter.BrokerMaxTopicCountFilter;
import org.apache.pulsar.broker.loadbalance.extensions.filter.BrokerVersionFilter;
import org.apache.pulsar.broker.loadbalance.extensions.models.UnloadCounter;
import org.apache.pulsar.broker.loadbalance.extensions.policies.AntiAffinityGroupPolicyHelper;
import org.apache.pulsar.broker.loadbalance.extensions.policies.IsolationPoliciesHelper;
import org.apache.pulsar.broker.loadbalance.extensions.scheduler.TransferShedder;
import org.apache.pulsar.broker.loadbalance.impl.BundleRangeCache;
import org.apache.pulsar.broker.loadbalance.impl.LoadManagerShared;
import org.apache.pulsar.broker.loadbalance.impl.SimpleResourceAllocationPolicies;
import org.apache.pulsar.broker.namespace.NamespaceService;
import org.apache.pulsar.broker.resources.PulsarResources;
import org.apache.pulsar.common.naming.NamespaceBundle;
import org.apache.pulsar.common.naming.NamespaceBundleFactory;
import org.apache.pulsar.common.util.FieldParser;
import org.apache.pulsar.metadata.api.MetadataStore;
import org.apache.pulsar.metadata.api.MetadataStoreConfig;
import org.apache.pulsar.metadata.api.MetadataStoreFactory;

public class Policies {
    static final ObjectMapper MAPPER = new ObjectMapper().configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);

    static class Pulsar extends PulsarService {
        ServiceConfiguration conf;
        PulsarResources resources;
        NamespaceService ns;
        AtomicReference<LoadManager> loadManager;

        Pulsar() {
            super(null);
        }

        @Override public ServiceConfiguration getConfiguration() { return conf; }
        @Override public ServiceConfiguration getConfig() { return conf; }
        @Override public PulsarResources getPulsarResources() { return resources; }
        @Override public NamespaceService getNamespaceService() { return ns; }
        @Override public AtomicReference<LoadManager> getLoadManager() { return loadManager; }
    }

    static class Namespaces extends NamespaceService {
        NamespaceBundleFactory factory;

        Namespaces() throws Exception {
            super(null);
        }

        @Override public NamespaceBundleFactory getNamespaceBundleFactory() { return factory; }
    }

    static class Factory extends NamespaceBundleFactory {
        Factory() {
            super(null, null);
        }
    }

    // allocate, set and config as in SplitTriggers.java: `java File.java` runs one source file, which cannot import
    // another
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

    static Object get(Object target, Class<?> owner, String name) throws Exception {
        Field f = owner.getDeclaredField(name);
        f.setAccessible(true);
        return f.get(target);
    }

    /** The modular leader, its available brokers given (it would list the brokers' locks in the metadata store). */
    static class Leader extends ModularLoadManagerImpl {
        final Set<String> available;

        Leader(Set<String> available) {
            this.available = available;
        }

        @Override public Set<String> getAvailableBrokers() { return available; }
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

    static void put(MetadataStore store, String path, Object value) throws Exception {
        store.put(path, MAPPER.writeValueAsString(value).getBytes(StandardCharsets.UTF_8), Optional.empty()).get();
    }

    /** Pulsar's own PulsarResources on an in-memory store holding ``policies``' isolation policies, namespaces'
     *  anti-affinity groups and failure domains as Pulsar keeps them. */
    static MetadataStore policyStore(Pulsar pulsar, String name, JsonNode policies) throws Exception {
        String cluster = pulsar.conf.getClusterName();
        MetadataStore store = MetadataStoreFactory.create("memory:" + name, MetadataStoreConfig.builder().build());
        pulsar.resources = new PulsarResources(store, store);
        if (policies.path("isolation").size() > 0) {
            put(store, "/admin/clusters/" + cluster + "/namespaceIsolationPolicies", policies.get("isolation"));
        }
        for (Iterator<Map.Entry<String, JsonNode>> it = policies.path("groups").fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            ObjectNode local = MAPPER.createObjectNode();
            local.set("namespaceAntiAffinityGroup", e.getValue());
            put(store, "/admin/local-policies/" + e.getKey(), local);
        }
        for (Iterator<Map.Entry<String, JsonNode>> it = policies.path("domains").fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            ObjectNode domain = MAPPER.createObjectNode();
            domain.set("brokers", e.getValue());
            put(store, "/admin/clusters/" + cluster + "/failureDomain/" + e.getKey(), domain);
        }
        return store;
    }

    static ArrayNode sorted(Set<String> brokers) {
        ArrayNode out = MAPPER.createArrayNode();
        new TreeSet<>(brokers).forEach(out::add);
        return out;
    }

    /** The bundle as the leader's lookup hands it over: flagged hasNonPersistentTopic where the case names it (as
     *  ConsistentHashingTopicBundleAssigner.findBundle flags it when a non-persistent topic is looked up). */
    static NamespaceBundle bundle(NamespaceBundleFactory factory, String name, Set<String> nonPersistent) {
        NamespaceBundle b = factory.getBundle(LoadManagerShared.getNamespaceNameFromBundleName(name),
                LoadManagerShared.getBundleRangeFromBundleName(name));
        b.setHasNonPersistentTopic(nonPersistent.contains(name));
        return b;
    }

    static ObjectNode run(JsonNode c) throws Exception {
        Pulsar pulsar = allocate(Pulsar.class);
        pulsar.conf = config(c.path("config"));
        MetadataStore store = policyStore(pulsar, c.get("name").asText(), c);
        Set<String> available = new HashSet<>();
        c.path("available").forEach(b -> available.add(b.asText()));
        JsonNode lookup = c.path("lookup");
        LoadManagerShared.BrokerTopicLoadingPredicate topics = new LoadManagerShared.BrokerTopicLoadingPredicate() {
            // ModularLoadManagerImpl's: a broker without load data serves neither kind
            @Override public boolean isEnablePersistentTopics(String broker) {
                return lookup.has(broker) && lookup.path(broker).path("persistentTopicsEnabled").asBoolean(true);
            }

            @Override public boolean isEnableNonPersistentTopics(String broker) {
                return lookup.has(broker) && lookup.path(broker).path("nonPersistentTopicsEnabled").asBoolean(true);
            }
        };
        BundleRangeCache ranges = new BundleRangeCache();
        Set<Map.Entry<String, ServiceUnitStateData>> channel = new LinkedHashSet<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = c.path("ownership").fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            String bundle = e.getKey(), broker = e.getValue().asText();
            if (lookup.has(broker)) {  // the modular leader fills its cache from the load reports it holds
                ranges.add(broker, LoadManagerShared.getNamespaceNameFromBundleName(bundle),
                        LoadManagerShared.getBundleRangeFromBundleName(bundle));
            }
            channel.add(new AbstractMap.SimpleEntry<>(bundle,
                    new ServiceUnitStateData(ServiceUnitState.Owned, broker, null, 1L)));
        }
        Map<String, String> domainOf = new HashMap<>();
        LoadManagerShared.refreshBrokerToFailureDomainMap(pulsar, domainOf);
        SimpleResourceAllocationPolicies policies = new SimpleResourceAllocationPolicies(pulsar);
        LoadData loadData = new LoadData();  // the modular leader's: a LocalBrokerData per broker with load data
        for (Iterator<Map.Entry<String, JsonNode>> it = lookup.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            loadData.getBrokerData().put(e.getKey(),
                    new BrokerData(MAPPER.treeToValue(e.getValue(), LocalBrokerData.class)));
        }

        ObjectNode out = MAPPER.createObjectNode();
        out.put("case", c.get("name").asText());
        NamespaceBundleFactory bundles = allocate(Factory.class);
        set(bundles, NamespaceBundleFactory.class, "hashFunc", Hashing.crc32());
        Set<String> nonPersistent = new HashSet<>();
        c.path("non_persistent").forEach(b -> nonPersistent.add(b.asText()));
        ArrayNode answers = out.putArray("queries");
        for (JsonNode q : c.path("queries")) {
            String bundle = q.get("bundle").asText(), current = q.get("current").asText();
            String namespace = LoadManagerShared.getNamespaceNameFromBundleName(bundle);
            ObjectNode a = answers.addObject();
            Set<String> allowed = new HashSet<>();
            LoadManagerShared.applyNamespacePolicies(bundle(bundles, bundle, nonPersistent), policies, allowed,
                    available, topics);
            a.set("isolation", sorted(allowed));
            Set<String> modular = new HashSet<>(available);
            LoadManagerShared.filterAntiAffinityGroupOwnedBrokers(pulsar, bundle, modular, ranges, domainOf);
            a.set("anti_affinity_modular", sorted(modular));
            Set<String> extensible = new HashSet<>(available);
            LoadManagerShared.filterAntiAffinityGroupOwnedBrokersAsync(pulsar, bundle, extensible, channel, domainOf).get();
            a.set("anti_affinity_extensible", sorted(extensible));
            a.put("should_unload_modular", LoadManagerShared.getNamespaceAntiAffinityGroup(pulsar, namespace).isEmpty()
                    || LoadManagerShared.shouldAntiAffinityNamespaceUnload(namespace, current, pulsar, ranges,
                            new HashSet<>(allowed)));
            a.put("should_unload_extensible", LoadManagerShared.shouldAntiAffinityNamespaceUnload(namespace, bundle,
                    current, pulsar, channel, new HashSet<>(allowed)));
            // the modular leader's selectBroker filters: large topic counts (preallocations none), then its pipeline
            Set<String> filtered = new HashSet<>(available);
            LoadManagerShared.filterBrokersWithLargeTopicCount(filtered, loadData,
                    pulsar.conf.getLoadBalancerBrokerMaxTopics());
            try {
                for (org.apache.pulsar.broker.loadbalance.BrokerFilter filter : List.of(  // the modular ones
                        new org.apache.pulsar.broker.loadbalance.impl.BrokerLoadManagerClassFilter(),
                        new org.apache.pulsar.broker.loadbalance.impl.BrokerVersionFilter())) {
                    filter.filter(filtered, new BundleData(), loadData, pulsar.conf);
                }
                a.set("modular_filters", sorted(filtered));
            } catch (BrokerFilterException e) {
                a.put("modular_filters", "error");
            }
            ObjectNode domains = a.putObject("domains");
            new TreeMap<>(domainOf).forEach(domains::put);
        }
        // the modular leader's whole selectBrokerForAssignment over a sequence of bundles, preallocations carried
        Leader leader = new Leader(available);
        set(leader, ModularLoadManagerImpl.class, "pulsar", pulsar);
        set(leader, ModularLoadManagerImpl.class, "pulsarResources", pulsar.resources);
        set(leader, ModularLoadManagerImpl.class, "conf", pulsar.conf);
        set(leader, ModularLoadManagerImpl.class, "policies", policies);
        set(leader, ModularLoadManagerImpl.class, "placementStrategy", ModularLoadManagerStrategy.create(pulsar.conf));
        set(leader, ModularLoadManagerImpl.class, "loadData", loadData);
        @SuppressWarnings("unchecked")
        Map<String, String> leaderDomains = (Map<String, String>) get(leader, ModularLoadManagerImpl.class,
                "brokerToFailureDomainMap");
        leaderDomains.putAll(domainOf);
        @SuppressWarnings("unchecked")
        List<Object> pipeline = (List<Object>) get(leader, ModularLoadManagerImpl.class, "filterPipeline");
        pipeline.add(new org.apache.pulsar.broker.loadbalance.impl.BrokerLoadManagerClassFilter());  // initialize()'s
        pipeline.add(new org.apache.pulsar.broker.loadbalance.impl.BrokerVersionFilter());
        BundleRangeCache leaderRanges = (BundleRangeCache) get(leader, ModularLoadManagerImpl.class,
                "brokerToNamespaceToBundleRange");
        for (Iterator<Map.Entry<String, JsonNode>> it = c.path("ownership").fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            if (lookup.has(e.getValue().asText())) {
                leaderRanges.add(e.getValue().asText(), LoadManagerShared.getNamespaceNameFromBundleName(e.getKey()),
                        LoadManagerShared.getBundleRangeFromBundleName(e.getKey()));
            }
        }
        ArrayNode picks = out.putArray("assigned");
        for (JsonNode b : c.path("assign")) {
            String bundle = b.asText();
            try {
                Optional<String> pick = leader.selectBrokerForAssignment(bundle(bundles, bundle, nonPersistent));
                if (pick.isPresent()) {
                    picks.add(pick.get());
                } else {
                    picks.addNull();
                }
            } catch (RuntimeException e) {  // a broker picked without load data: its overload check throws
                picks.add("error: " + e.getClass().getSimpleName());
            }
        }
        // what updateBundleData makes of a bundle it has no data of: getBundleDataOrDefault (the stored BundleData,
        // else the bundle's ResourceQuota, else the default), then the report's sample
        ArrayNode seeded = out.putArray("seeded");
        for (JsonNode seed : c.path("seeds")) {
            String bundle = seed.get("bundle").asText();
            if (seed.has("stored")) {
                put(store, "/loadbalance/bundle-data/" + bundle, seed.get("stored"));
            }
            if (seed.has("quota")) {
                put(store, "/loadbalance/resource-quota/" + bundle, seed.get("quota"));
            }
            BundleData data = leader.getBundleDataOrDefault(bundle);
            data.update(MAPPER.treeToValue(seed.get("sample"), NamespaceBundleStats.class));
            seeded.add(MAPPER.valueToTree(data));
        }
        ((java.util.concurrent.ExecutorService) get(leader, ModularLoadManagerImpl.class, "executors")).shutdownNow();
        store.close();
        return out;
    }

    /** A package-private static method of the oracle's Transfer family. */
    static Method oracle(String name, Class<?>... types) throws Exception {
        Method m = Class.forName("pulsaroracle.Transfer").getDeclaredMethod(name, types);
        m.setAccessible(true);
        return m;
    }

    static Object call(Object target, String name) throws Exception {
        Method m = target.getClass().getDeclaredMethod(name);
        m.setAccessible(true);
        return m.invoke(target);
    }

    static ObjectNode runTransfer(JsonNode c) throws Exception {
        JsonNode pol = c.path("policies");
        Pulsar pulsar = allocate(Pulsar.class);
        pulsar.conf = config(c.path("config"));
        MetadataStore store = policyStore(pulsar, c.get("name").asText(), pol);
        Namespaces ns = allocate(Namespaces.class);
        ns.factory = allocate(Factory.class);
        set(ns.factory, NamespaceBundleFactory.class, "hashFunc", Hashing.crc32());
        pulsar.ns = ns;

        Set<Map.Entry<String, ServiceUnitStateData>> owned = new LinkedHashSet<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = pol.path("owned").fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            owned.add(new AbstractMap.SimpleEntry<>(e.getKey(),
                    new ServiceUnitStateData(ServiceUnitState.Owned, e.getValue().asText(), null, 1L)));
        }
        AtomicReference<Set<String>> notOwned = new AtomicReference<>(Set.of());
        ServiceUnitStateChannel channel = (ServiceUnitStateChannel) Proxy.newProxyInstance(
                ServiceUnitStateChannel.class.getClassLoader(), new Class<?>[] {ServiceUnitStateChannel.class},
                (p, method, args) -> switch (method.getName()) {
                    case "getOwnershipEntrySet" -> owned;
                    case "isOwner" -> !notOwned.get().contains(String.valueOf(args[0]));
                    default -> throw new UnsupportedOperationException(method.getName());
                });
        ExtensibleLoadManagerImpl impl = allocate(ExtensibleLoadManagerImpl.class);
        set(impl, ExtensibleLoadManagerImpl.class, "serviceUnitStateChannel", channel);
        ExtensibleLoadManagerWrapper wrapper = allocate(ExtensibleLoadManagerWrapper.class);
        set(wrapper, ExtensibleLoadManagerWrapper.class, "loadManager", impl);
        pulsar.loadManager = new AtomicReference<>(wrapper);

        Map<String, String> domainOf = new HashMap<>();
        LoadManagerShared.refreshBrokerToFailureDomainMap(pulsar, domainOf);
        AntiAffinityGroupPolicyHelper antiAffinity = new AntiAffinityGroupPolicyHelper(pulsar, channel);
        set(antiAffinity, AntiAffinityGroupPolicyHelper.class, "brokerToFailureDomainMap", domainOf);
        IsolationPoliciesHelper isolation = new IsolationPoliciesHelper(new SimpleResourceAllocationPolicies(pulsar));
        List<BrokerFilter> filters = new ArrayList<>(List.of(new BrokerLoadManagerClassFilter(),
                new BrokerMaxTopicCountFilter(), new BrokerVersionFilter(),  // the constructor's three, then start()'s
                new AntiAffinityGroupPolicyFilter(antiAffinity), new BrokerIsolationPoliciesFilter(isolation)));
        UnloadCounter counter = new UnloadCounter();
        TransferShedder shedder = new TransferShedder(pulsar, counter, filters, isolation, antiAffinity);

        Method prepare = oracle("prepare", JsonNode.class, JsonNode.class, List.class);
        Method decisions = oracle("decisions", Object.class);
        Method counters = oracle("counters", Object.class);
        Method skipReason = oracle("skipReason", Map.class, Map.class);
        Method resetLoadStats = oracle("resetLoadStats", Object.class);
        AtomicReference<LoadManagerContext> lastContext = new AtomicReference<>();
        ObjectNode out = MAPPER.createObjectNode();
        out.put("case", c.get("name").asText());
        ArrayNode calls = out.putArray("calls");
        int index = 0;
        for (JsonNode call : c.path("calls")) {
            ObjectNode o = calls.addObject();
            o.put("index", index++);
            JsonNode ownership = call.path("overrides").has("ownership") ? call.path("overrides").get("ownership")
                    : c.path("ownership");
            Set<String> not = new HashSet<>();
            if (ownership.path("check_enabled").asBoolean(false)) {
                ownership.path("not_owned").forEach(b -> not.add(b.asText()));
            }
            notOwned.set(not);
            Object prepared = prepare.invoke(null, c, call, new ArrayList<String>());
            Object context = call(prepared, "context");
            lastContext.set((LoadManagerContext) context);
            // the oracle's registry answers a map of placeholder lookup data: the case's take their place
            BrokerRegistry registry = ((LoadManagerContext) context).brokerRegistry();
            @SuppressWarnings("unchecked")
            Map<String, BrokerLookupData> lookup = (Map<String, BrokerLookupData>)
                    registry.getAvailableBrokerLookupDataAsync().get();
            for (String broker : new ArrayList<>(lookup.keySet())) {
                JsonNode l = pol.path("lookup").path(broker);
                lookup.put(broker, new BrokerLookupData("http://" + broker, null, "pulsar://" + broker, null,
                        Map.of(), Map.of(), l.path("persistentTopicsEnabled").asBoolean(true),
                        l.path("nonPersistentTopicsEnabled").asBoolean(true),
                        l.path("loadManagerClassName").isNull() || l.path("loadManagerClassName").isMissingNode()
                                ? null : l.path("loadManagerClassName").asText(),
                        1L, l.path("brokerVersion").asText("4.0.8"), Map.of()));
            }
            resetLoadStats.invoke(null, counter);
            @SuppressWarnings("unchecked")
            Map<String, Long> before = (Map<String, Long>) counters.invoke(null, counter);
            Object result = shedder.findBundlesForUnloading((LoadManagerContext) context,
                    (Map<String, Long>) call(prepared, "recentBundles"), (Map<String, Long>) call(prepared, "recentBrokers"));
            o.set("decisions", (JsonNode) decisions.invoke(null, result));
            @SuppressWarnings("unchecked")
            Map<String, Long> after = (Map<String, Long>) counters.invoke(null, counter);
            Object skip = skipReason.invoke(null, before, after);
            if (skip == null) {
                o.putNull("skip_reason");
            } else {
                o.put("skip_reason", skip.toString());
            }
        }
        // ExtensibleLoadManagerImpl.selectAsync on the last call's stores and registry: where a bundle is assigned
        ArrayNode assigned = out.putArray("assigned");
        Set<String> nonPersistent = new HashSet<>();
        c.path("non_persistent").forEach(b -> nonPersistent.add(b.asText()));
        set(impl, ExtensibleLoadManagerImpl.class, "brokerRegistry", lastContext.get().brokerRegistry());
        set(impl, ExtensibleLoadManagerImpl.class, "context", lastContext.get());
        set(impl, ExtensibleLoadManagerImpl.class, "brokerFilterPipeline", filters);
        set(impl, ExtensibleLoadManagerImpl.class, "brokerSelectionStrategy",
                new org.apache.pulsar.broker.loadbalance.extensions.strategy.LeastResourceUsageWithWeight());
        for (JsonNode b : c.path("assign")) {
            String bundle = b.asText();
            Optional<String> pick = impl.selectAsync(bundle(ns.factory, bundle, nonPersistent), Set.of(),
                    org.apache.pulsar.broker.namespace.LookupOptions.builder().build()).get();
            if (pick.isPresent()) {
                assigned.add(pick.get());
            } else {
                assigned.addNull();
            }
        }
        store.close();
        return out;
    }

    public static void main(String[] args) throws Exception {
        PrintStream answers = System.out;
        System.setOut(System.err);  // Pulsar's log lines go to stderr; stdout carries the answers only
        for (String path : args) {
            JsonNode c = MAPPER.readTree(new File(path));
            ObjectNode out;
            try {
                out = c.has("kind") ? runTransfer(c) : run(c);
            } catch (Exception e) {
                Throwable t = e instanceof java.lang.reflect.InvocationTargetException i ? i.getCause() : e;
                out = MAPPER.createObjectNode();
                out.put("case", c.path("name").asText());
                out.put("error", t.getClass().getSimpleName() + ": " + t.getMessage());
            }
            answers.println(MAPPER.writeValueAsString(out));
        }
        answers.flush();
        System.exit(0);  // a case that threw may have left a store's or a load manager's threads behind
    }
}
