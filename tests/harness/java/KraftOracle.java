/*
 * KraftOracle: replays a KRaft __cluster_metadata directory with Apache Kafka's own classes
 * (FileRecords, MetadataRecordSerde, MetadataDelta, MetadataImage, TopicsDelta.localChanges) and prints
 * images / local replica changes as JSON in the shapes documented in tests/harness/README.md.
 *
 * Compiled at test time by tests/harness/oracle.py against the jars of one Kafka version (3.9 to 4.4);
 * the few APIs that differ between versions are called reflectively, and oracle.py points the imports of
 * the record classes (RECORD_CLASSES there) at the package the jars have them in
 * (org.apache.kafka.common.record up to 4.2, org.apache.kafka.common.record.internal from 4.3).
 * Never committed as a binary.
 *
 * Commands (all take --dir <__cluster_metadata-0 dir> and --source auto|log|snapshot):
 *   image   --offset N [--offset M ...]            one JSON image per line
 *   changes --from A --to B [--broker ID ...]      one JSON local-changes object per line (default: all brokers)
 *   steps   --offsets a,b,c [--brokers 1,2,3]      {"images":[...], "changes":[...], "warnings":[...]}
 *   verify-snapshots                               compares every snapshot with log replay at its end offset
 *   bench   [--warmup N] [--repeat N]              full replay timing, one JSON line (also: --bench flag)
 */

import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.metadata.AbortTransactionRecord;
import org.apache.kafka.common.metadata.BeginTransactionRecord;
import org.apache.kafka.common.metadata.EndTransactionRecord;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.record.ControlRecordType;
import org.apache.kafka.common.record.ControlRecordUtils;
import org.apache.kafka.common.record.FileLogInputStream.FileChannelRecordBatch;
import org.apache.kafka.common.record.FileRecords;
import org.apache.kafka.common.record.Record;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.token.delegation.TokenInformation;
import org.apache.kafka.image.ClientQuotaImage;
import org.apache.kafka.image.ConfigurationImage;
import org.apache.kafka.image.LocalReplicaChanges;
import org.apache.kafka.image.MetadataDelta;
import org.apache.kafka.image.MetadataImage;
import org.apache.kafka.image.MetadataProvenance;
import org.apache.kafka.image.TopicImage;
import org.apache.kafka.image.TopicsDelta;
import org.apache.kafka.metadata.BrokerRegistration;
import org.apache.kafka.metadata.ControllerRegistration;
import org.apache.kafka.metadata.DelegationTokenData;
import org.apache.kafka.metadata.MetadataRecordSerde;
import org.apache.kafka.metadata.PartitionRegistration;
import org.apache.kafka.metadata.ScramCredentialData;
import org.apache.kafka.metadata.VersionRange;
import org.apache.kafka.metadata.authorizer.StandardAcl;
import org.apache.kafka.server.common.ApiMessageAndVersion;

import java.io.File;
import java.io.IOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

public class KraftOracle {

    // ------------------------------------------------------------------ version-dependent APIs (reflection)

    private static Constructor<?> provCtor;
    private static boolean provHasAligned;

    static MetadataProvenance provenance(long offset, int epoch, long timeMs) {
        try {
            if (provCtor == null) {
                try {
                    provCtor = MetadataProvenance.class.getConstructor(long.class, int.class, long.class, boolean.class);
                    provHasAligned = true;
                } catch (NoSuchMethodException e) {
                    provCtor = MetadataProvenance.class.getConstructor(long.class, int.class, long.class);
                    provHasAligned = false;
                }
            }
            return (MetadataProvenance) (provHasAligned
                ? provCtor.newInstance(offset, epoch, timeMs, true)
                : provCtor.newInstance(offset, epoch, timeMs));
        } catch (ReflectiveOperationException e) {
            throw new RuntimeException(e);
        }
    }

    /** The value of the first of the zero-argument methods {@code names} the object's class has. */
    static Object call(Object target, String... names) {
        for (String name : names) {
            Method m;
            try {
                m = target.getClass().getMethod(name);
            } catch (NoSuchMethodException e) {
                continue;
            }
            try {
                return m.invoke(target);
            } catch (InvocationTargetException e) {
                throw new RuntimeException(e.getCause());
            } catch (ReflectiveOperationException e) {
                throw new RuntimeException(e);
            }
        }
        throw new IllegalStateException(target.getClass().getName() + " has none of " + Arrays.toString(names));
    }

    /**
     * The SupportedConfigChecker a broker of this release replays ConfigRecords with, or null for a release
     * without one: with KAFKA-19851 (4.3.0, backported to 4.2.1; on the 4.1 and 4.0 branches after 4.1.2 and
     * 4.0.2) brokers (SharedServer) and the metadata shell build their MetadataDelta with
     * org.apache.kafka.server.config.DefaultSupportedConfigChecker, which drops ConfigRecords of unknown
     * TOPIC / GROUP / CLIENT_METRICS config names and of every resource type but BROKER.
     */
    static final Object CONFIG_CHECKER = newConfigChecker();

    static Object newConfigChecker() {
        Class<?> cls;
        try {
            cls = Class.forName("org.apache.kafka.server.config.DefaultSupportedConfigChecker");
        } catch (ClassNotFoundException e) {
            return null;
        }
        try {
            return cls.getConstructor().newInstance();
        } catch (ReflectiveOperationException e) {
            throw new RuntimeException(e);
        }
    }

    /** A MetadataDelta on {@code image}, built as a broker of this release builds it (MetadataLoader). */
    static MetadataDelta newDelta(MetadataImage image) {
        MetadataDelta.Builder builder = new MetadataDelta.Builder().setImage(image);
        if (CONFIG_CHECKER != null) {
            try {
                Class<?> iface = Class.forName("org.apache.kafka.metadata.SupportedConfigChecker");
                MetadataDelta.Builder.class.getMethod("setSupportedConfigChecker", iface).invoke(builder, CONFIG_CHECKER);
            } catch (ReflectiveOperationException e) {
                throw new RuntimeException(e);
            }
        }
        return builder.build();
    }

    /** metadata.version feature level of an image, or null if the image has none (4.x empty image). */
    static Short metadataVersionLevel(MetadataImage image) {
        try {
            Method m = image.features().getClass().getMethod("metadataVersion");
            Object v = m.invoke(image.features());
            if (v instanceof Optional) v = ((Optional<?>) v).orElse(null);
            if (v == null) return null;
            return (Short) v.getClass().getMethod("featureLevel").invoke(v);
        } catch (ReflectiveOperationException e) {
            throw new RuntimeException(e);
        }
    }

    // ------------------------------------------------------------------ files

    static final Pattern SEGMENT = Pattern.compile("^(\\d{20})\\.log$");
    static final Pattern CHECKPOINT = Pattern.compile("^(\\d{20})-(\\d{10})\\.checkpoint$");

    static final class Snap {
        final File file; final long endOffset; final int epoch;
        Snap(File f, long e, int ep) { file = f; endOffset = e; epoch = ep; }
    }

    static List<File> segments(File dir) {
        List<File> out = new ArrayList<>();
        File[] fs = dir.listFiles();
        if (fs == null) throw new IllegalArgumentException("not a directory: " + dir);
        for (File f : fs) if (SEGMENT.matcher(f.getName()).matches()) out.add(f);
        out.sort(Comparator.comparing(File::getName));
        return out;
    }

    static List<Snap> snapshots(File dir) {
        List<Snap> out = new ArrayList<>();
        File[] fs = dir.listFiles();
        if (fs == null) return out;
        for (File f : fs) {
            Matcher m = CHECKPOINT.matcher(f.getName());
            if (m.matches()) {
                long end = Long.parseLong(m.group(1));
                // 0-0 is the bootstrap snapshot, never an image of a broker's MetadataLoader: from 4.3
                // KafkaRaftClient hands snapshot id (0, 0) to Listener.handleLoadBootstrap, which the loader
                // ignores (from 4.4 the file holds the bootstrap records, KIP-1170, which the controller
                // writes into the log when it activates); up to 4.2 it went to handleLoadSnapshot, but held
                // KRaft control records only (no metadata record: the image before offset 0).
                if (end > 0) out.add(new Snap(f, end, Integer.parseInt(m.group(2))));
            }
        }
        out.sort(Comparator.comparingLong(s -> s.endOffset));
        return out;
    }

    static ApiMessageAndVersion decode(Record r) {
        return MetadataRecordSerde.INSTANCE.read(new ByteBufferAccessor(r.value()), r.valueSize());
    }

    // ------------------------------------------------------------------ replay engine

    /** Visible-state tracker with the intended transaction semantics (docs/replay-rules.md). */
    static final class Stream {
        MetadataImage image;                 // last published image
        MetadataDelta delta;                 // pending changes on top of image
        List<ApiMessage> txn;                // buffered records of an open transaction, null if none
        long visOffset; int visEpoch; long visTime;
        final List<String> warnings;

        Stream(MetadataImage base, List<String> warnings) {
            this.warnings = warnings;
            reset(base);
        }

        void reset(MetadataImage base) {
            image = base;
            delta = newDelta(base);
            txn = null;
            visOffset = base.provenance().lastContainedOffset();
            visEpoch = base.provenance().lastContainedEpoch();
            visTime = base.provenance().lastContainedLogTimeMs();
        }

        void replayOne(ApiMessage m, long offset) {
            try {
                delta.replay(m);
            } catch (Throwable t) {
                warnings.add("replay error at offset " + offset + " (" + m.getClass().getSimpleName() + "): " + t);
            }
        }

        void record(ApiMessage m, long offset, int epoch, long time) {
            if (m instanceof BeginTransactionRecord) {
                if (txn != null) warnings.add("BeginTransactionRecord inside a transaction at offset " + offset);
                else txn = new ArrayList<>();
            } else if (m instanceof EndTransactionRecord) {
                if (txn == null) warnings.add("EndTransactionRecord without transaction at offset " + offset);
                else { for (ApiMessage b : txn) replayOne(b, offset); txn = null; }
            } else if (m instanceof AbortTransactionRecord) {
                if (txn == null) warnings.add("AbortTransactionRecord without transaction at offset " + offset);
                else txn = null;
            } else if (txn != null) {
                txn.add(m);
            } else {
                replayOne(m, offset);
            }
            if (txn == null) { visOffset = offset; visEpoch = epoch; visTime = time; }
        }

        void control(long lastOffset, int epoch, long time) {
            if (txn == null) { visOffset = lastOffset; visEpoch = epoch; visTime = time; }
        }

        /** Publish pending changes (not while a transaction is open); returns the current image. */
        MetadataImage publish() {
            if (txn != null) return image;
            MetadataProvenance p = provenance(visOffset, visEpoch, visTime);
            try {
                image = delta.apply(p);
            } catch (Throwable t) {
                warnings.add("delta.apply failed at offset " + visOffset + ": " + t);
            }
            delta = newDelta(image);
            return image;
        }
    }

    /** Local-changes tracker: one delta from image(A), fed records A+1..B (same transaction rules). */
    static final class ChangesTracker {
        final MetadataImage base; final MetadataDelta delta; List<ApiMessage> txn; final List<String> warnings;

        ChangesTracker(MetadataImage base, List<ApiMessage> openTxn, List<String> warnings) {
            this.base = base;
            this.delta = newDelta(base);
            this.txn = openTxn == null ? null : new ArrayList<>(openTxn);
            this.warnings = warnings;
        }

        void record(ApiMessage m, long offset) {
            if (m instanceof BeginTransactionRecord) { if (txn == null) txn = new ArrayList<>(); }
            else if (m instanceof EndTransactionRecord) {
                if (txn != null) { for (ApiMessage b : txn) replay(b, offset); txn = null; }
            } else if (m instanceof AbortTransactionRecord) txn = null;
            else if (txn != null) txn.add(m);
            else replay(m, offset);
        }

        void replay(ApiMessage m, long offset) {
            try { delta.replay(m); } catch (Throwable t) { /* already reported by Stream */ }
        }
    }

    /** Callback at each requested target offset (after all records <= target were fed). */
    interface TargetListener { void at(long target, Stream s); }

    interface RecordListener { void record(ApiMessage m, long offset); }

    static final class Stats { long records, batches, controlBatches, bytes, lastOffset = -1; }

    static MetadataImage loadSnapshot(Snap snap, List<String> warnings, Stats stats) throws IOException {
        MetadataDelta d = newDelta(MetadataImage.EMPTY);
        long ts = -1;
        try (FileRecords fr = FileRecords.open(snap.file, false)) {
            for (FileChannelRecordBatch batch : fr.batches()) {
                batch.ensureValid();
                if (stats != null) { stats.batches++; stats.bytes += batch.sizeInBytes(); }
                if (batch.isControlBatch()) {
                    for (Record r : batch) {
                        if (ControlRecordType.parse(r.key()) == ControlRecordType.SNAPSHOT_HEADER) {
                            ts = ControlRecordUtils.deserializeSnapshotHeaderRecord(r).lastContainedLogTimestamp();
                        }
                    }
                    continue;
                }
                for (Record r : batch) {
                    if (stats != null) stats.records++;
                    ApiMessage m = decode(r).message();
                    try { d.replay(m); } catch (Throwable t) {
                        warnings.add("snapshot " + snap.file.getName() + ": replay error: " + t);
                    }
                }
            }
        }
        d.finishSnapshot();
        return d.apply(provenance(snap.endOffset - 1, snap.epoch, ts));
    }

    /**
     * Replays the directory up to max(targets), calling the listener at each target.  Source selection:
     * "log" = from offset 0 (segments must start at 0); "snapshot" = newest snapshot with end-1 <= min(target);
     * "auto" = snapshot if one qualifies (as Kafka's loader would), else log.
     */
    static Stats run(File dir, String source, long[] targets, TargetListener tl, RecordListener rl,
                     List<String> warnings) throws IOException {
        long[] ts = targets.clone();
        Arrays.sort(ts);
        long minT = ts.length == 0 ? Long.MAX_VALUE : ts[0];
        long maxT = ts.length == 0 ? Long.MAX_VALUE : ts[ts.length - 1];
        Stats stats = new Stats();
        List<File> segs = segments(dir);
        Snap chosen = null;
        if (!source.equals("log")) {
            for (Snap s : snapshots(dir)) if (s.endOffset - 1 <= minT) chosen = s;
            if (chosen == null && source.equals("snapshot"))
                throw new IllegalArgumentException("no snapshot with end offset - 1 <= " + minT + " in " + dir);
        }
        if (chosen == null && !segs.isEmpty()) {
            long base = Long.parseLong(segs.get(0).getName().substring(0, 20));
            if (base != 0) throw new IllegalStateException("log starts at offset " + base + " and no usable snapshot");
        }
        MetadataImage start = chosen == null ? MetadataImage.EMPTY : loadSnapshot(chosen, warnings, stats);
        long startAfter = chosen == null ? -1 : chosen.endOffset - 1;
        Stream s = new Stream(start, warnings);
        int ti = 0;
        while (ti < ts.length && ts[ti] <= startAfter) {          // targets at/below the snapshot
            tl.at(ts[ti++], s);
        }
        outer:
        for (File seg : segs) {
            try (FileRecords fr = FileRecords.open(seg, false)) {
                for (FileChannelRecordBatch batch : fr.batches()) {
                    if (batch.lastOffset() <= startAfter) continue;
                    if (batch.baseOffset() > maxT) break outer;
                    batch.ensureValid();
                    stats.batches++;
                    stats.bytes += batch.sizeInBytes();
                    stats.lastOffset = batch.lastOffset();
                    int epoch = batch.partitionLeaderEpoch();
                    long time = batch.maxTimestamp();
                    if (batch.isControlBatch()) {
                        stats.controlBatches++;
                        long upTo = Math.min(batch.lastOffset(), maxT);
                        // control batches only advance the offset; fire targets inside them
                        while (ti < ts.length && ts[ti] <= upTo) {
                            s.control(ts[ti], epoch, time);
                            s.publish();
                            tl.at(ts[ti++], s);
                        }
                        s.control(upTo, epoch, time);
                        continue;
                    }
                    for (Record r : batch) {
                        long off = r.offset();
                        if (off <= startAfter) continue;
                        if (off > maxT) break;
                        stats.records++;
                        ApiMessage m = decode(r).message();
                        s.record(m, off, epoch, time);
                        if (rl != null) rl.record(m, off);
                        if (ti < ts.length && ts[ti] == off) {
                            s.publish();
                            while (ti < ts.length && ts[ti] == off) tl.at(ts[ti++], s);
                        }
                    }
                    s.publish();
                }
            }
        }
        s.publish();
        while (ti < ts.length) tl.at(ts[ti++], s);   // targets past the end: the final image
        return stats;
    }

    // ------------------------------------------------------------------ JSON rendering

    static String uuid(Uuid u) { return u == null ? null : u.toString(); }

    static List<Object> ints(int[] a) {
        List<Object> l = new ArrayList<>();
        if (a != null) for (int x : a) l.add(x);
        return l;
    }

    static List<Object> uuids(Uuid[] a) {
        List<Object> l = new ArrayList<>();
        if (a != null) for (Uuid u : a) l.add(uuid(u));
        return l;
    }

    static Map<String, Object> obj() { return new LinkedHashMap<>(); }

    static List<Object> endpoints(Map<String, org.apache.kafka.common.Endpoint> listeners) {
        List<Object> out = new ArrayList<>();
        for (Map.Entry<String, org.apache.kafka.common.Endpoint> e : new TreeMap<>(listeners).entrySet()) {
            Map<String, Object> o = obj();
            o.put("name", e.getKey());
            o.put("host", e.getValue().host());
            o.put("port", e.getValue().port());
            o.put("securityProtocol", e.getValue().securityProtocol() == null ? null : (int) e.getValue().securityProtocol().id);
            out.add(o);
        }
        return out;
    }

    static List<Object> versionRanges(Map<String, VersionRange> m) {
        List<Object> out = new ArrayList<>();
        for (Map.Entry<String, VersionRange> e : new TreeMap<>(m).entrySet()) {
            Map<String, Object> o = obj();
            o.put("name", e.getKey());
            o.put("minSupportedVersion", (int) e.getValue().min());
            o.put("maxSupportedVersion", (int) e.getValue().max());
            out.add(o);
        }
        return out;
    }

    /** BrokerRegistration.isMigratingZkBroker() exists in 3.x only (ZK migration was removed in 4.0). */
    static boolean isMigratingZkBroker(BrokerRegistration b) {
        try {
            BrokerRegistration.class.getMethod("isMigratingZkBroker");
        } catch (NoSuchMethodException e) {
            return false;
        }
        return (Boolean) call(b, "isMigratingZkBroker");
    }

    /** BrokerRegistration.cordonedDirectories() (4.3+, KIP-1066): null when the registration has none
     *  (every release before 4.3, and a broker that has not sent them yet), else Kafka's list order. */
    @SuppressWarnings("unchecked")
    static List<Object> cordonedLogDirs(BrokerRegistration b) {
        try {
            BrokerRegistration.class.getMethod("cordonedDirectories");
        } catch (NoSuchMethodException e) {
            return null;
        }
        List<Uuid> dirs = (List<Uuid>) call(b, "cordonedDirectories");
        if (dirs == null) return null;
        List<Object> out = new ArrayList<>();
        for (Uuid d : dirs) out.add(uuid(d));
        return out;
    }

    static Map<String, Object> partitionJson(String topic, Uuid topicId, int pid, PartitionRegistration p) {
        Map<String, Object> o = obj();
        o.put("topic", topic);
        o.put("topicId", uuid(topicId));
        o.put("partitionId", pid);
        o.put("replicas", ints(p.replicas));
        o.put("isr", ints(p.isr));
        o.put("removingReplicas", ints(p.removingReplicas));
        o.put("addingReplicas", ints(p.addingReplicas));
        o.put("leader", p.leader);
        o.put("leaderRecoveryState", (int) p.leaderRecoveryState.value());
        o.put("leaderEpoch", p.leaderEpoch);
        o.put("partitionEpoch", p.partitionEpoch);
        o.put("directories", uuids(p.directories));
        o.put("eligibleLeaderReplicas", ints(p.elr));
        o.put("lastKnownElr", ints(p.lastKnownElr));
        return o;
    }

    static Map<String, Object> imageJson(MetadataImage img) {
        Map<String, Object> o = obj();
        o.put("offset", img.provenance().lastContainedOffset());
        o.put("epoch", img.provenance().lastContainedEpoch());
        o.put("timestamp", img.provenance().lastContainedLogTimeMs());

        List<TopicImage> byName = new ArrayList<>(img.topics().topicsById().values());
        byName.sort(Comparator.comparing(TopicImage::name).thenComparing(t -> t.id().toString()));
        List<Object> topics = new ArrayList<>(), parts = new ArrayList<>();
        for (TopicImage t : byName) {
            Map<String, Object> to = obj();
            to.put("name", t.name());
            to.put("topicId", uuid(t.id()));
            topics.add(to);
            for (Map.Entry<Integer, PartitionRegistration> e : t.partitions().entrySet())
                parts.add(partitionJson(t.name(), t.id(), e.getKey(), e.getValue()));
        }
        parts.sort(Comparator.comparing((Object m) -> (String) ((Map<?, ?>) m).get("topic"))
            .thenComparingInt(m -> (Integer) ((Map<?, ?>) m).get("partitionId"))
            .thenComparing(m -> (String) ((Map<?, ?>) m).get("topicId")));
        o.put("topics", topics);
        o.put("partitions", parts);

        List<Object> brokers = new ArrayList<>();
        for (BrokerRegistration b : new TreeMap<>(img.cluster().brokers()).values()) {
            Map<String, Object> bo = obj();
            bo.put("brokerId", b.id());
            bo.put("brokerEpoch", b.epoch());
            bo.put("incarnationId", uuid(b.incarnationId()));
            bo.put("fenced", b.fenced());
            bo.put("inControlledShutdown", b.inControlledShutdown());
            bo.put("isMigratingZkBroker", isMigratingZkBroker(b));
            bo.put("rack", b.rack().orElse(null));
            bo.put("endPoints", endpoints(b.listeners()));
            bo.put("features", versionRanges(b.supportedFeatures()));
            List<Object> dirs = new ArrayList<>();
            for (Uuid d : b.directories()) dirs.add(uuid(d));
            bo.put("logDirs", dirs);
            bo.put("cordonedLogDirs", cordonedLogDirs(b));
            brokers.add(bo);
        }
        o.put("brokers", brokers);

        List<Object> controllers = new ArrayList<>();
        for (ControllerRegistration c : new TreeMap<>(img.cluster().controllers()).values()) {
            Map<String, Object> co = obj();
            co.put("controllerId", c.id());
            co.put("incarnationId", uuid(c.incarnationId()));
            co.put("zkMigrationReady", c.zkMigrationReady());
            co.put("endPoints", endpoints(c.listeners()));
            co.put("features", versionRanges(c.supportedFeatures()));
            controllers.add(co);
        }
        o.put("controllers", controllers);

        List<Map<String, Object>> configs = new ArrayList<>();
        for (Map.Entry<ConfigResource, ConfigurationImage> e : img.configs().resourceData().entrySet()) {
            for (Map.Entry<String, String> kv : e.getValue().data().entrySet()) {
                Map<String, Object> co = obj();
                co.put("resourceType", e.getKey().type().name());
                co.put("resourceName", e.getKey().name());
                co.put("name", kv.getKey());
                co.put("value", kv.getValue());
                configs.add(co);
            }
        }
        configs.sort(Comparator.comparing((Map<String, Object> m) -> (String) m.get("resourceType"))
            .thenComparing(m -> (String) m.get("resourceName"))
            .thenComparing(m -> (String) m.get("name")));
        o.put("configs", new ArrayList<Object>(configs));

        Map<String, Object> features = new TreeMap<>();
        for (Map.Entry<String, Short> e : img.features().finalizedVersions().entrySet())
            features.put(e.getKey(), (int) e.getValue());
        Short mv = metadataVersionLevel(img);
        if (mv != null) features.put("metadata.version", (int) mv);
        o.put("features", features);

        Map<String, Object> pids = obj();
        pids.put("nextProducerId", img.producerIds().nextProducerId());
        o.put("producerIds", pids);

        List<Map<String, Object>> quotas = new ArrayList<>();
        for (Map.Entry<ClientQuotaEntity, ClientQuotaImage> e : img.clientQuotas().entities().entrySet()) {
            @SuppressWarnings("unchecked")   // ClientQuotaImage.quotaMap(); a record with quotas() from 4.4
            Map<String, Double> quotaMap = (Map<String, Double>) call(e.getValue(), "quotaMap", "quotas");
            for (Map.Entry<String, Double> q : new TreeMap<>(quotaMap).entrySet()) {
                Map<String, Object> qo = obj();
                Map<String, Object> ent = new TreeMap<>();
                ent.putAll(e.getKey().entries());
                qo.put("entity", ent);
                qo.put("key", q.getKey());
                qo.put("value", q.getValue());
                quotas.add(qo);
            }
        }
        quotas.sort(KraftOracle::compareQuota);
        o.put("clientQuotas", new ArrayList<Object>(quotas));

        List<Map<String, Object>> acls = new ArrayList<>();
        for (Map.Entry<Uuid, StandardAcl> e : img.acls().acls().entrySet()) {
            StandardAcl a = e.getValue();
            Map<String, Object> ao = obj();
            ao.put("id", uuid(e.getKey()));
            ao.put("resourceType", (int) a.resourceType().code());
            ao.put("resourceName", a.resourceName());
            ao.put("patternType", (int) a.patternType().code());
            ao.put("principal", a.principal());
            ao.put("host", a.host());
            ao.put("operation", (int) a.operation().code());
            ao.put("permissionType", (int) a.permissionType().code());
            acls.add(ao);
        }
        acls.sort(Comparator.comparing(m -> (String) m.get("id")));
        o.put("acls", new ArrayList<Object>(acls));

        List<Object> scram = new ArrayList<>();
        Base64.Encoder b64 = Base64.getEncoder();
        TreeMap<String, Map<String, ScramCredentialData>> mechs = new TreeMap<>();
        img.scram().mechanisms().forEach((k, v) -> mechs.put(k.mechanismName(), v));
        for (Map.Entry<String, Map<String, ScramCredentialData>> me : mechs.entrySet()) {
            for (Map.Entry<String, ScramCredentialData> ue : new TreeMap<>(me.getValue()).entrySet()) {
                Map<String, Object> so = obj();
                so.put("mechanism", me.getKey());
                so.put("name", ue.getKey());
                so.put("salt", b64.encodeToString(ue.getValue().salt()));
                so.put("storedKey", b64.encodeToString(ue.getValue().storedKey()));
                so.put("serverKey", b64.encodeToString(ue.getValue().serverKey()));
                so.put("iterations", ue.getValue().iterations());
                scram.add(so);
            }
        }
        o.put("scram", scram);

        List<Object> tokens = new ArrayList<>();
        for (Map.Entry<String, DelegationTokenData> e : new TreeMap<>(img.delegationTokens().tokens()).entrySet()) {
            TokenInformation ti = e.getValue().tokenInformation();
            Map<String, Object> to = obj();
            to.put("tokenId", e.getKey());
            to.put("owner", principal(ti.owner()));
            to.put("requester", principal(ti.tokenRequester()));
            List<Object> renewers = new ArrayList<>();
            for (KafkaPrincipal p : ti.renewers()) renewers.add(principal(p));   // record order
            to.put("renewers", renewers);
            to.put("issueTimestamp", ti.issueTimestamp());
            to.put("maxTimestamp", ti.maxTimestamp());
            to.put("expirationTimestamp", ti.expiryTimestamp());
            tokens.add(to);
        }
        o.put("delegationTokens", tokens);
        return o;
    }

    static String principal(KafkaPrincipal p) { return p == null ? null : p.toString(); }

    /** Client quota order: entity (type, name) pairs sorted by type, compared pairwise (type; a null name
     *  before any name; name), a prefix first; then the quota key. */
    @SuppressWarnings("unchecked")
    static int compareQuota(Map<String, Object> a, Map<String, Object> b) {
        List<Map.Entry<String, Object>> ea = new ArrayList<>(((Map<String, Object>) a.get("entity")).entrySet());
        List<Map.Entry<String, Object>> eb = new ArrayList<>(((Map<String, Object>) b.get("entity")).entrySet());
        for (int i = 0; i < Math.min(ea.size(), eb.size()); i++) {
            int c = ea.get(i).getKey().compareTo(eb.get(i).getKey());
            if (c != 0) return c;
            String na = (String) ea.get(i).getValue(), nb = (String) eb.get(i).getValue();
            if (na == null || nb == null) {
                if (na != nb) return na == null ? -1 : 1;
            } else if ((c = na.compareTo(nb)) != 0) return c;
        }
        if (ea.size() != eb.size()) return Integer.compare(ea.size(), eb.size());
        return ((String) a.get("key")).compareTo((String) b.get("key"));
    }

    static Map<String, Object> partitionInfoJson(TopicPartition tp, LocalReplicaChanges.PartitionInfo pi) {
        PartitionRegistration p = pi.partition();
        Map<String, Object> o = obj();
        o.put("topic", tp.topic());
        o.put("topicId", uuid(pi.topicId()));
        o.put("partitionId", tp.partition());
        o.put("leader", p.leader);
        o.put("leaderEpoch", p.leaderEpoch);
        o.put("partitionEpoch", p.partitionEpoch);
        o.put("isr", ints(p.isr));
        o.put("replicas", ints(p.replicas));
        o.put("addingReplicas", ints(p.addingReplicas));
        o.put("removingReplicas", ints(p.removingReplicas));
        return o;
    }

    static final Comparator<TopicPartition> TP_ORDER =
        Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition);

    static List<Object> infoList(Map<TopicPartition, LocalReplicaChanges.PartitionInfo> m) {
        List<Object> out = new ArrayList<>();
        List<TopicPartition> keys = new ArrayList<>(m.keySet());
        keys.sort(TP_ORDER);
        for (TopicPartition tp : keys) out.add(partitionInfoJson(tp, m.get(tp)));
        return out;
    }

    static Map<String, Object> changesJson(int broker, long from, long to, TopicsDelta td) {
        Map<String, Object> o = obj();
        o.put("broker", broker);
        o.put("fromOffset", from);
        o.put("toOffset", to);
        List<Object> deletes = new ArrayList<>(), dirs = new ArrayList<>();
        List<Object> leaders = new ArrayList<>(), followers = new ArrayList<>(), elected = new ArrayList<>();
        Map<String, Object> topicIds = new TreeMap<>();
        if (td != null) {
            LocalReplicaChanges c = td.localChanges(broker);
            List<TopicPartition> del = new ArrayList<>(c.deletes());
            del.sort(TP_ORDER);
            for (TopicPartition tp : del) {
                Map<String, Object> d = obj();
                d.put("topic", tp.topic());
                d.put("partitionId", tp.partition());
                deletes.add(d);
            }
            leaders = infoList(c.leaders());
            followers = infoList(c.followers());
            elected = infoList(c.electedLeaders());
            for (Map.Entry<String, Uuid> e : c.topicIds().entrySet()) topicIds.put(e.getKey(), uuid(e.getValue()));
            List<Map.Entry<TopicIdPartition, Uuid>> de = new ArrayList<>(c.directoryIds().entrySet());
            de.sort(Comparator.comparing((Map.Entry<TopicIdPartition, Uuid> e) -> e.getKey().topic())
                .thenComparingInt(e -> e.getKey().partition()));
            for (Map.Entry<TopicIdPartition, Uuid> e : de) {
                Map<String, Object> d = obj();
                d.put("topicId", uuid(e.getKey().topicId()));
                d.put("topic", e.getKey().topic());
                d.put("partitionId", e.getKey().partition());
                d.put("directory", uuid(e.getValue()));
                dirs.add(d);
            }
        }
        o.put("deletes", deletes);
        o.put("leaders", leaders);
        o.put("followers", followers);
        o.put("electedLeaders", elected);
        o.put("topicIds", topicIds);
        o.put("directoryIds", dirs);
        return o;
    }

    // ------------------------------------------------------------------ minimal JSON writer

    static String toJson(Object v) {
        StringBuilder sb = new StringBuilder();
        writeJson(sb, v);
        return sb.toString();
    }

    @SuppressWarnings("unchecked")
    static void writeJson(StringBuilder sb, Object v) {
        if (v == null) sb.append("null");
        else if (v instanceof String) {
            String s = (String) v;
            sb.append('"');
            for (int i = 0; i < s.length(); i++) {
                char c = s.charAt(i);
                switch (c) {
                    case '"': sb.append("\\\""); break;
                    case '\\': sb.append("\\\\"); break;
                    case '\n': sb.append("\\n"); break;
                    case '\r': sb.append("\\r"); break;
                    case '\t': sb.append("\\t"); break;
                    default:
                        if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
                        else sb.append(c);
                }
            }
            sb.append('"');
        } else if (v instanceof Double || v instanceof Float) {
            double d = ((Number) v).doubleValue();
            if (Double.isNaN(d) || Double.isInfinite(d)) sb.append('"').append(d).append('"');
            else sb.append(d);
        } else if (v instanceof Number || v instanceof Boolean) sb.append(v);
        else if (v instanceof Map) {
            sb.append('{');
            boolean first = true;
            for (Map.Entry<String, Object> e : ((Map<String, Object>) v).entrySet()) {
                if (!first) sb.append(',');
                first = false;
                writeJson(sb, e.getKey());
                sb.append(':');
                writeJson(sb, e.getValue());
            }
            sb.append('}');
        } else if (v instanceof List) {
            sb.append('[');
            boolean first = true;
            for (Object x : (List<Object>) v) {
                if (!first) sb.append(',');
                first = false;
                writeJson(sb, x);
            }
            sb.append(']');
        } else throw new IllegalArgumentException("cannot render " + v.getClass());
    }

    // ------------------------------------------------------------------ commands

    static final class Args {
        final Map<String, List<String>> opts = new LinkedHashMap<>();
        String cmd;
        Args(String[] a) {
            for (int i = 0; i < a.length; i++) {
                if (a[i].startsWith("--")) {
                    String k = a[i].substring(2);
                    String v = (i + 1 < a.length && !a[i + 1].startsWith("--")) ? a[++i] : "true";
                    opts.computeIfAbsent(k, x -> new ArrayList<>()).add(v);
                } else if (cmd == null) cmd = a[i];
                else throw new IllegalArgumentException("unexpected argument " + a[i]);
            }
        }
        String get(String k, String dflt) { List<String> l = opts.get(k); return l == null ? dflt : l.get(l.size() - 1); }
        List<String> all(String k) { return opts.getOrDefault(k, new ArrayList<>()); }
        boolean has(String k) { return opts.containsKey(k); }
        String req(String k) {
            String v = get(k, null);
            if (v == null) throw new IllegalArgumentException("missing --" + k);
            return v;
        }
    }

    static List<Long> longs(List<String> raw) {
        List<Long> out = new ArrayList<>();
        for (String r : raw) for (String p : r.split(",")) if (!p.isEmpty()) out.add(Long.parseLong(p.trim()));
        return out;
    }

    static long[] arr(List<Long> l) { long[] a = new long[l.size()]; for (int i = 0; i < a.length; i++) a[i] = l.get(i); return a; }

    public static void main(String[] argv) throws Exception {
        Args a = new Args(argv);
        String cmd = a.cmd == null ? (a.has("bench") ? "bench" : "help") : a.cmd;
        List<String> warnings = new ArrayList<>();
        int rc = 0;
        switch (cmd) {
            case "image": rc = cmdImage(a, warnings); break;
            case "changes": rc = cmdChanges(a, warnings); break;
            case "steps": rc = cmdSteps(a, warnings); break;
            case "verify-snapshots": rc = cmdVerifySnapshots(a, warnings); break;
            case "bench": rc = cmdBench(a, warnings); break;
            default:
                System.err.println("usage: KraftOracle image|changes|steps|verify-snapshots|bench --dir DIR ... (see source)");
                rc = 2;
        }
        if (a.has("bench") && !cmd.equals("bench")) cmdBench(a, warnings);
        for (String w : warnings) System.err.println("WARNING: " + w);
        System.out.flush();
        System.exit(rc);
    }

    static File dir(Args a) { return new File(a.req("dir")); }

    static int cmdImage(Args a, List<String> warnings) throws IOException {
        long[] offs = arr(longs(a.all("offset")));
        if (offs.length == 0) offs = new long[]{Long.MAX_VALUE};
        Map<Long, String> out = new TreeMap<>();
        run(dir(a), a.get("source", "auto"), offs, (t, s) -> out.put(t, toJson(imageJson(s.image))), null, warnings);
        for (long o : offs) System.out.println(out.get(o));
        return 0;
    }

    /** Collects images at targets and local changes between consecutive targets in one pass. */
    static final class StepCollector implements TargetListener, RecordListener {
        final long[] targets; final List<Integer> brokers; final boolean allBrokers;
        final List<Object> images = new ArrayList<>(), changes = new ArrayList<>();
        final List<String> warnings;
        ChangesTracker tracker; long prevOffset; MetadataImage prevImage;

        StepCollector(long[] targets, List<Integer> brokers, List<String> warnings) {
            this.targets = targets; this.brokers = brokers; this.allBrokers = brokers.isEmpty();
            this.warnings = warnings;
        }

        public void record(ApiMessage m, long offset) { if (tracker != null) tracker.record(m, offset); }

        public void at(long target, Stream s) {
            MetadataImage img = s.image;
            images.add(imageJson(img));
            if (tracker != null) {
                TopicsDelta td = tracker.delta.topicsDelta();
                // self-check: the single delta must produce the same image as the per-batch stream
                try {
                    MetadataImage viaDelta = tracker.delta.apply(img.provenance());
                    if (!toJson(imageJson(viaDelta)).equals(toJson(imageJson(img))))
                        warnings.add("self-check: single-delta image differs from stream image at offset " + target);
                } catch (Throwable t) {
                    warnings.add("self-check: single delta failed to apply at " + target + ": " + t);
                }
                for (int b : brokerIds(prevImage, img)) {
                    changes.add(changesJson(b, prevImage.provenance().lastContainedOffset(),
                        img.provenance().lastContainedOffset(), td));
                }
            }
            prevImage = img;
            prevOffset = target;
            tracker = new ChangesTracker(img, s.txn, warnings);
        }

        List<Integer> brokerIds(MetadataImage a, MetadataImage b) {
            if (!allBrokers) return brokers;
            TreeSet<Integer> ids = new TreeSet<>(a.cluster().brokers().keySet());
            ids.addAll(b.cluster().brokers().keySet());
            return new ArrayList<>(ids);
        }
    }

    static List<Integer> ints(List<String> raw) {
        List<Integer> out = new ArrayList<>();
        for (Long l : longs(raw)) out.add(l.intValue());
        return out;
    }

    static int cmdChanges(Args a, List<String> warnings) throws IOException {
        long from = Long.parseLong(a.req("from")), to = Long.parseLong(a.req("to"));
        if (to < from) throw new IllegalArgumentException("--to must be >= --from");
        StepCollector sc = new StepCollector(new long[]{from, to}, ints(a.all("broker")), warnings);
        run(dir(a), a.get("source", "auto"), sc.targets, sc, sc, warnings);
        for (Object c : sc.changes) System.out.println(toJson(c));
        return 0;
    }

    static int cmdSteps(Args a, List<String> warnings) throws IOException {
        List<Long> offs = longs(a.all("offsets"));
        offs.addAll(longs(a.all("offset")));
        for (int i = 1; i < offs.size(); i++)
            if (offs.get(i) < offs.get(i - 1)) throw new IllegalArgumentException("--offsets must be ascending");
        StepCollector sc = new StepCollector(arr(offs), ints(a.all("brokers")), warnings);
        Stats st = run(dir(a), a.get("source", "auto"), sc.targets, sc, sc, warnings);
        Map<String, Object> o = obj();
        o.put("images", sc.images);
        o.put("changes", sc.changes);
        o.put("warnings", new ArrayList<Object>(warnings));
        o.put("records", st.records);
        System.out.println(toJson(o));
        return 0;
    }

    static int cmdVerifySnapshots(Args a, List<String> warnings) throws IOException {
        File d = dir(a);
        List<Object> results = new ArrayList<>();
        boolean ok = true;
        for (Snap s : snapshots(d)) {
            String fromSnap = toJson(imageJson(loadSnapshot(s, warnings, null)));
            Map<Long, String> out = new TreeMap<>();
            run(d, "log", new long[]{s.endOffset - 1}, (t, st) -> out.put(t, toJson(imageJson(st.image))), null, warnings);
            String fromLog = out.get(s.endOffset - 1);
            Map<String, Object> r = obj();
            r.put("snapshot", s.file.getName());
            r.put("offset", s.endOffset - 1);
            r.put("equal", fromSnap.equals(fromLog));
            if (!fromSnap.equals(fromLog)) {
                ok = false;
                r.put("fromSnapshot", fromSnap);
                r.put("fromLog", fromLog);
            }
            results.add(r);
        }
        System.out.println(toJson(results));
        return ok ? 0 : 1;
    }

    static int cmdBench(Args a, List<String> warnings) throws IOException {
        File d = dir(a);
        String source = a.get("source", "log");
        int warmup = Integer.parseInt(a.get("warmup", "0"));
        int repeat = Math.max(1, Integer.parseInt(a.get("repeat", "1")));
        for (int i = 0; i < warmup; i++) run(d, source, new long[0], (t, s) -> { }, null, new ArrayList<>());
        long best = Long.MAX_VALUE, total = 0;
        Stats st = null;
        final MetadataImage[] last = new MetadataImage[1];
        for (int i = 0; i < repeat; i++) {
            long t0 = System.nanoTime();
            st = run(d, source, new long[]{Long.MAX_VALUE}, (t, s) -> last[0] = s.image, null,
                i == 0 ? warnings : new ArrayList<>());
            long dt = System.nanoTime() - t0;
            best = Math.min(best, dt);
            total += dt;
        }
        Map<String, Object> o = obj();
        o.put("bench", "kafka-oracle-replay");
        o.put("dir", d.getPath());
        o.put("source", source);
        o.put("records", st.records);
        o.put("batches", st.batches);
        o.put("controlBatches", st.controlBatches);
        o.put("bytes", st.bytes);
        o.put("lastOffset", last[0] == null ? -1 : last[0].provenance().lastContainedOffset());
        o.put("repeat", repeat);
        o.put("warmup", warmup);
        o.put("wallMs", best / 1e6);
        o.put("meanWallMs", total / 1e6 / repeat);
        o.put("recordsPerSec", best == 0 ? 0.0 : st.records / (best / 1e9));
        System.out.println(toJson(o));
        return 0;
    }
}
