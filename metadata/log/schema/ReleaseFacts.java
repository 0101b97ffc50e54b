/*
 * Prints, as one JSON object, what a Kafka release's own classes say about its replay rules: the
 * metadata.version levels (org.apache.kafka.server.common.MetadataVersion) and the config names its
 * DefaultSupportedConfigChecker accepts per resource type (Kafka 4.3+; null before).
 *
 * Run by metadata/log/schema/update.py with the release's jars on the class path. Everything is read by
 * reflection, so this one source compiles without Kafka and runs against every release line.
 */

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Predicate;

public final class ReleaseFacts {
    private static final String CHECKER = "org.apache.kafka.server.config.DefaultSupportedConfigChecker";
    private static final String NO_SUCH_CONFIG = "kraft-replay.no.such.config";

    public static void main(String[] args) throws Exception {
        StringBuilder out = new StringBuilder("{\"metadataVersions\": [");
        Class<?> mv = Class.forName("org.apache.kafka.server.common.MetadataVersion");
        Method featureLevel = mv.getMethod("featureLevel");
        Method version = mv.getMethod("version");
        String sep = "";
        for (Object value : mv.getEnumConstants()) {
            short level = (Short) featureLevel.invoke(value);
            if (level < 1) {
                continue; // inter-broker protocol versions of ZooKeeper clusters: no KRaft level
            }
            out.append(sep).append("{\"level\": ").append(level)
                .append(", \"name\": ").append(quote((String) version.invoke(value))).append('}');
            sep = ", ";
        }
        Object latest = mv.getField("LATEST_PRODUCTION").get(null);
        out.append("], \"latestProduction\": ").append(featureLevel.invoke(latest));
        out.append(", \"supportedConfigs\": ").append(supportedConfigs()).append('}');
        System.out.println(out);
    }

    /** {"TOPIC": {"id": 2, "names": [...]}, "BROKER": {"id": 4, "names": null (any)}, ...}, or null. */
    private static String supportedConfigs() throws Exception {
        Class<?> checkerClass;
        try {
            checkerClass = Class.forName(CHECKER);
        } catch (ClassNotFoundException e) {
            return "null";
        }
        Object checker = checkerClass.getConstructor().newInstance();
        Field byType = checkerClass.getDeclaredField("validConfigsByType");
        byType.setAccessible(true);
        Class<?> typeClass = Class.forName("org.apache.kafka.common.config.ConfigResource$Type");
        Method isSupported = checkerClass.getMethod("isSupported", typeClass, String.class);
        Method id = typeClass.getMethod("id");
        Map<String, String> types = new TreeMap<>();
        for (Map.Entry<?, ?> entry : ((Map<?, ?>) byType.get(checker)).entrySet()) {
            Object type = entry.getKey();
            Object predicate = entry.getValue();
            String names;
            Field keys = keysField(predicate);
            if (keys != null) {
                TreeSet<String> sorted = new TreeSet<>();
                for (Object name : (Collection<?>) keys.get(predicate)) {
                    sorted.add((String) name);
                }
                List<String> quoted = new ArrayList<>();
                for (String name : sorted) {
                    if (!(Boolean) isSupported.invoke(checker, type, name)) {
                        throw new IllegalStateException(type + " " + name + " is listed but not supported");
                    }
                    quoted.add(quote(name));
                }
                if ((Boolean) isSupported.invoke(checker, type, NO_SUCH_CONFIG)) {
                    throw new IllegalStateException(type + " accepts names it does not list");
                }
                names = "[" + String.join(", ", quoted) + "]";
            } else if (((Predicate<String>) predicate).test(NO_SUCH_CONFIG)) {
                names = "null";
            } else {
                throw new IllegalStateException("cannot enumerate the config names " + type + " accepts: " + predicate);
            }
            types.put(type.toString(), "{\"id\": " + id.invoke(type) + ", \"names\": " + names + "}");
        }
        List<String> parts = new ArrayList<>();
        types.forEach((type, value) -> parts.add(quote(type) + ": " + value));
        return "{" + String.join(", ", parts) + "}";
    }

    private static Field keysField(Object predicate) {
        for (Field field : predicate.getClass().getDeclaredFields()) {
            if (Collection.class.isAssignableFrom(field.getType())) {
                field.setAccessible(true);
                return field;
            }
        }
        return null;
    }

    private static String quote(String text) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : text.toCharArray()) {
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        return out.append('"').toString();
    }
}
