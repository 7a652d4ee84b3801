// Prints the iteration orders of Java's own HashMap and ConcurrentHashMap, and the result of Java's TimSort with
// Pulsar 4.0.7's AvgShedder comparator, for the key lists given on stdin: the reference data for
// lb_pipeline.model.javahash and javasort (tests/conformance/java_orders.jsonl). Run by `make conformance`:
//   java tests/conformance/java/JavaOrders.java < input > output
// Input, one case per line, fields separated by TAB: id, kind, then the keys (or doubles).
//   kind "hashmap" | "chm": one map filled with the keys in order;
//   kind "hashmap-reused": groups of keys separated by an empty field, each group put into the same map after clear();
//   kind "int-sort": doubles sorted with (o1, o2) -> (int) (o1 - o2) as AvgShedder 4.0.7 does.
// Output, one line per case: id TAB the keys in iteration order (groups separated by an empty field), or the
// indexes of the sorted doubles, or "ERROR<TAB>message".
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;

public class JavaOrders {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder out = new StringBuilder();
        for (String line; (line = in.readLine()) != null; ) {
            if (line.isEmpty()) continue;
            String[] f = line.split("\t", -1);
            String id = f[0], kind = f[1];
            List<String> items = new ArrayList<>(Arrays.asList(f).subList(2, f.length));
            out.append(id).append('\t');
            try {
                switch (kind) {
                    case "hashmap" -> {
                        Map<String, Integer> m = new HashMap<>();
                        items.forEach(k -> m.put(k, 0));
                        out.append(String.join("\t", m.keySet()));
                    }
                    case "chm" -> {
                        Map<String, Integer> m = new ConcurrentHashMap<>();
                        items.forEach(k -> m.put(k, 0));
                        out.append(String.join("\t", m.keySet()));
                    }
                    case "hashmap-reused" -> {
                        Map<String, Integer> m = new HashMap<>();
                        List<String> groups = new ArrayList<>();
                        List<String> group = new ArrayList<>();
                        items.add("");
                        for (String k : items) {
                            if (!k.isEmpty()) { group.add(k); continue; }
                            m.clear();
                            group.forEach(x -> m.put(x, 0));
                            groups.add(String.join("\t", m.keySet()));
                            group.clear();
                        }
                        out.append(String.join("\t\t", groups));
                    }
                    case "int-sort" -> {
                        Map<Integer, Double> m = new java.util.LinkedHashMap<>();
                        for (int i = 0; i < items.size(); i++) m.put(i, Double.parseDouble(items.get(i)));
                        List<Integer> sorted = m.entrySet().stream()
                                .sorted((o1, o2) -> (int) (o1.getValue() - o2.getValue()))
                                .map(Map.Entry::getKey).collect(Collectors.toList());
                        out.append(sorted.stream().map(String::valueOf).collect(Collectors.joining("\t")));
                    }
                    default -> throw new IllegalArgumentException("unknown kind " + kind);
                }
            } catch (RuntimeException e) {
                out.append("ERROR\t").append(e.getClass().getSimpleName()).append(": ").append(e.getMessage());
            }
            out.append('\n');
        }
        System.out.print(out);
    }
}
