// Runs Pulsar's own BundleSplitterTask.findBundlesToSplit (the modular load manager's split trigger) on JSON cases:
// the reference data for lb_pipeline.algorithms.splits.triggers.modular_split_candidates. The pulsar-oracle has no
// family for it (the task takes a live PulsarService); here the broker's two services are subclasses created
// without running their constructors (sun.misc.Unsafe.allocateInstance), answering only what the task asks: the
// configuration and NamespaceService.getBundleCount. Run by `make conformance` against the oracle's class path:
//   java -cp .oracle/4.0.8/pulsar-oracle.jar tests/conformance/java/SplitTriggers.java case.json [more.json ...]
// A case: {"name", "config": {key: value}, "brokers": {broker: LocalBrokerData JSON}, "bundleData": {bundle:
// BundleData JSON}, "bundleCounts": {namespace: count}, "cycles": n}; the leader reads LocalBrokerData and
// BundleData from the metadata store with Jackson, and so does this harness. A namespace without a count makes
// getBundleCount throw, as a failed lookup does. Output, one line per case: {"case", "cycles": [[[bundle, broker],
// ...] in the result map's order, per cycle]} or {"case", "error"}.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.File;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.util.Iterator;
import java.util.Map;
import org.apache.pulsar.broker.PulsarService;
import org.apache.pulsar.broker.ServiceConfiguration;
import org.apache.pulsar.broker.loadbalance.LoadData;
import org.apache.pulsar.broker.loadbalance.impl.BundleSplitterTask;
import org.apache.pulsar.broker.namespace.NamespaceService;
import org.apache.pulsar.common.naming.NamespaceName;
import org.apache.pulsar.common.util.FieldParser;
import org.apache.pulsar.policies.data.loadbalancer.BrokerData;
import org.apache.pulsar.policies.data.loadbalancer.BundleData;
import org.apache.pulsar.policies.data.loadbalancer.LocalBrokerData;

public class SplitTriggers {
    static final ObjectMapper MAPPER = new ObjectMapper()
            .configure(com.fasterxml.jackson.databind.DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);

    static class Pulsar extends PulsarService {
        ServiceConfiguration conf;
        NamespaceService ns;

        Pulsar() {
            super(null);
        }

        @Override
        public ServiceConfiguration getConfiguration() {
            return conf;
        }

        @Override
        public NamespaceService getNamespaceService() {
            return ns;
        }
    }

    static class Namespaces extends NamespaceService {
        JsonNode counts;

        Namespaces() throws Exception {
            super(null);
        }

        @Override
        public int getBundleCount(NamespaceName namespace) throws Exception {
            JsonNode n = counts.get(namespace.toString());
            if (n == null) {
                throw new IllegalStateException("no bundles known for " + namespace);
            }
            return n.asInt();
        }
    }

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

    static ObjectNode run(JsonNode c) throws Exception {
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
        System.setOut(System.err);  // Pulsar's log lines (a failed bundle count is logged) go to stderr
        for (String path : args) {
            JsonNode c = MAPPER.readTree(new File(path));
            ObjectNode out;
            try {
                out = run(c);
            } catch (Exception e) {
                out = MAPPER.createObjectNode();
                out.put("case", c.path("name").asText());
                out.put("error", e.toString());
            }
            answers.println(MAPPER.writeValueAsString(out));
        }
    }
}
