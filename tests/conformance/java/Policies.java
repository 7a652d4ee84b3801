// Runs Pulsar's own policy paths of broker selection on JSON cases: the reference data for the namespace isolation
// policies and anti-affinity groups of lb_pipeline.algorithms (shedding/selection.py, anti_affinity.py). The
// pulsar-oracle has no family for them: they read the cluster's policies through PulsarService's metadata store.
// Here the PulsarService is a subclass created without running its constructor (sun.misc.Unsafe.allocateInstance)
// whose PulsarResources are Pulsar's own, on an in-memory metadata store holding the case's policies as the JSON
// Pulsar keeps them: the isolation policies at /admin/clusters/<cluster>/namespaceIsolationPolicies, each
// namespace's local policies (its anti-affinity group) at /admin/local-policies/<namespace>, each failure domain at
// /admin/clusters/<cluster>/failureDomain/<domain>. Run by `make conformance` against the oracle's class path:
//   java -cp .oracle/4.0.8/pulsar-oracle.jar tests/conformance/java/Policies.java case.json [more.json ...]
//
// A case: {"name", "config": {key: value} (clusterName, failureDomainsEnabled), "available": [broker, ...],
// "lookup": {broker: {"persistentTopicsEnabled", "nonPersistentTopicsEnabled"}} (the brokers with load data), "isolation": {name:
// NamespaceIsolationData JSON}, "groups": {namespace: anti-affinity group}, "domains": {domain: [broker, ...]},
// "ownership": {bundle: broker}, "queries": [{"bundle", "current"}]}. Per query, as the modular leader asks (the
// brokers' namespace → bundle-range cache from the ownership of the brokers with load data, as the leader fills it
// from their reports) and as the extensible one does (the service-unit channel's entries, each Owned by its
// broker):
//   "isolation": LoadManagerShared.applyNamespacePolicies over the available brokers (sorted);
//   "anti_affinity_modular" / "anti_affinity_extensible": filterAntiAffinityGroupOwnedBrokers over the available
//     brokers, with the failure domains refreshBrokerToFailureDomainMap reads (sorted);
//   "should_unload_modular" / "should_unload_extensible": shouldAntiAffinityNamespaceUnload with the isolation
//     result as the candidates (ModularLoadManagerImpl.shouldAntiAffinityNamespaceUnload);
//   "domains": the broker → failure domain map refreshed from the store.
// Output: one line per case, {"case", "queries": [...]}; a case that throws gives {"case", "error"}.
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.File;
import java.io.PrintStream;
import java.lang.reflect.Field;
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
import org.apache.pulsar.broker.PulsarService;
import org.apache.pulsar.broker.ServiceConfiguration;
import org.apache.pulsar.broker.loadbalance.extensions.channel.ServiceUnitState;
import org.apache.pulsar.broker.loadbalance.extensions.channel.ServiceUnitStateData;
import org.apache.pulsar.broker.loadbalance.impl.BundleRangeCache;
import org.apache.pulsar.broker.loadbalance.impl.LoadManagerShared;
import org.apache.pulsar.broker.loadbalance.impl.SimpleResourceAllocationPolicies;
import org.apache.pulsar.broker.resources.PulsarResources;
import org.apache.pulsar.common.naming.NamespaceName;
import org.apache.pulsar.common.util.FieldParser;
import org.apache.pulsar.metadata.api.MetadataStore;
import org.apache.pulsar.metadata.api.MetadataStoreConfig;
import org.apache.pulsar.metadata.api.MetadataStoreFactory;

public class Policies {
    static final ObjectMapper MAPPER = new ObjectMapper().configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);

    static class Pulsar extends PulsarService {
        ServiceConfiguration conf;
        PulsarResources resources;

        Pulsar() {
            super(null);
        }

        @Override public ServiceConfiguration getConfiguration() { return conf; }
        @Override public ServiceConfiguration getConfig() { return conf; }
        @Override public PulsarResources getPulsarResources() { return resources; }
    }

    // allocate and config as in SplitTriggers.java: `java File.java` runs one source file, which cannot import another
    @SuppressWarnings("unchecked")
    static <T> T allocate(Class<T> type) throws Exception {
        Field f = Class.forName("sun.misc.Unsafe").getDeclaredField("theUnsafe");
        f.setAccessible(true);
        Object unsafe = f.get(null);
        return (T) unsafe.getClass().getMethod("allocateInstance", Class.class).invoke(unsafe, type);
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

    static ArrayNode sorted(Set<String> brokers) {
        ArrayNode out = MAPPER.createArrayNode();
        new TreeSet<>(brokers).forEach(out::add);
        return out;
    }

    static ObjectNode run(JsonNode c) throws Exception {
        Pulsar pulsar = allocate(Pulsar.class);
        pulsar.conf = config(c.path("config"));
        String cluster = pulsar.conf.getClusterName();
        MetadataStore store = MetadataStoreFactory.create("memory:" + c.get("name").asText(),
                MetadataStoreConfig.builder().build());
        pulsar.resources = new PulsarResources(store, store);
        if (c.path("isolation").size() > 0) {
            put(store, "/admin/clusters/" + cluster + "/namespaceIsolationPolicies", c.get("isolation"));
        }
        for (Iterator<Map.Entry<String, JsonNode>> it = c.path("groups").fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            ObjectNode local = MAPPER.createObjectNode();
            local.set("namespaceAntiAffinityGroup", e.getValue());
            put(store, "/admin/local-policies/" + e.getKey(), local);
        }
        for (Iterator<Map.Entry<String, JsonNode>> it = c.path("domains").fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            ObjectNode domain = MAPPER.createObjectNode();
            domain.set("brokers", e.getValue());
            put(store, "/admin/clusters/" + cluster + "/failureDomain/" + e.getKey(), domain);
        }
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

        ObjectNode out = MAPPER.createObjectNode();
        out.put("case", c.get("name").asText());
        ArrayNode answers = out.putArray("queries");
        for (JsonNode q : c.path("queries")) {
            String bundle = q.get("bundle").asText(), current = q.get("current").asText();
            String namespace = LoadManagerShared.getNamespaceNameFromBundleName(bundle);
            ObjectNode a = answers.addObject();
            Set<String> allowed = new HashSet<>();
            LoadManagerShared.applyNamespacePolicies(NamespaceName.get(namespace), policies, allowed, available, topics);
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
            ObjectNode domains = a.putObject("domains");
            new TreeMap<>(domainOf).forEach(domains::put);
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
                out = run(c);
            } catch (Exception e) {
                out = MAPPER.createObjectNode();
                out.put("case", c.path("name").asText());
                out.put("error", e.getClass().getSimpleName() + ": " + e.getMessage());
            }
            answers.println(MAPPER.writeValueAsString(out));
        }
    }
}
