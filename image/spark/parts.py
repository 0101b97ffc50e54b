"""The image parts as set-based transforms of event frames (replay-semantics.md §1-8).

Every part follows one pattern: the events of a key (base rows first, then log records in offset
order) are folded with running windows into the key's state after each event (last non-null
value per field, counters for epochs); an event's state holds for the targets from its segment
up to the segment of the key's next event (or of whatever ends it, e.g. the removal of its
topic); :func:`expand` emits one row per such target (column ``_i``). Records Kafka rejects are
detected with the same windows (or anti-joins) and reported through ``ctx.error``; the states are
computed without them, as a lenient replay skips them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from image.frames import SCHEMAS
from image.spark.plan import SHIFT, Base, Plan
from image.uuids import MIGRATING

NO_LEADER_CHANGE = -2
LENGTHS_DIFFER = "The lengths for replicas and directories do not match."
METADATA_VERSION = "metadata.version"
RESOURCE_TYPES = {0: "UNKNOWN", 2: "TOPIC", 4: "BROKER", 8: "BROKER_LOGGER", 16: "CLIENT_METRICS", 32: "GROUP"}
SCRAM_MECHANISMS = {0: "UNKNOWN", 1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
_RUNNING = (Window.unboundedPreceding, Window.currentRow)
_FAR = 1 << 62  # beyond every position


class Context(Protocol):
    """What a part needs from the pass computing it (see :class:`image.spark.run.Run`)."""

    plan: Plan
    spark: SparkSession

    @property
    def base(self) -> Base: ...

    def typed(self, name: str) -> DataFrame:
        """Typed rows of the base snapshot and of the log up to the last target, with ``_seq``,
        ``_pos``, ``_seg`` and ``_aborted``."""

    def base_rows(self, part: str, seq: int) -> DataFrame | None:
        """A checkpoint base's rows of image part ``part`` with ``_pos``/``_seg`` (None otherwise)."""

    def error(self, rows: DataFrame, message: Column) -> None:
        """Report ``rows`` (events with ``offset``, ``_seq``, ``type``) as rejected records."""


def window(*keys: str) -> Window:
    """Keyed window in event order (partition by ``keys``, order by ``_pos``)."""
    return Window.partitionBy(*keys).orderBy("_pos")


def running(*keys: str) -> Window:
    return window(*keys).rowsBetween(*_RUNNING)


def state_until_next(rows: DataFrame, *keys: str, m: int, end_seg: Column | None = None) -> DataFrame:
    """``_seg_to``: the state of each event holds until the segment of the key's next event (or
    ``end_seg``, or past the last target)."""
    stop = F.coalesce(F.lead("_seg").over(window(*keys)), F.lit(m))
    if end_seg is not None:
        stop = F.least(stop, F.coalesce(end_seg, F.lit(m)))
    return rows.withColumn("_seg_to", stop)


def expand(rows: DataFrame, part: str) -> DataFrame:
    """One row per target index ``_i`` in ``[_seg, _seg_to)``, columns of image part ``part``."""
    schema = SCHEMAS[part]
    return (rows.where(F.col("_seg") < F.col("_seg_to"))
            .select(F.explode(F.sequence(F.col("_seg"), F.col("_seg_to") - 1)).alias("_i"),
                    *[F.col(f.name).cast(f.dataType).alias(f.name) for f in schema.fields]))


def all_migrating(directories: Column) -> Column:
    """Every directory is MIGRATING (true for an empty list)."""
    return F.forall(directories, lambda d: d == F.lit(MIGRATING))


def dedupe_by(array: Column, key: str) -> Column:
    """Map semantics for a list of structs: a later element with the same ``key`` wins."""
    return F.filter(array, lambda e, i: ~F.exists(F.slice(array, i + 2, F.size(array)), lambda f: f[key] == e[key]))


def endpoints(array: Column) -> Column:
    """Listener map: deduplicated by name, unknown security protocol ids → null."""
    return F.transform(dedupe_by(array, "name"), lambda e: F.struct(
        e["name"].alias("name"), e["host"].alias("host"), e["port"].alias("port"),
        F.when(e["securityProtocol"].between(0, 3), e["securityProtocol"]).alias("securityProtocol")))


def _flip_sign(hex_digit: Column) -> Column:
    return F.translate(hex_digit, "0123456789ABCDEF", "89ABCDEF01234567")


def _uuid_order(uuid: Column) -> Column:
    """A string whose order is Kafka's Uuid order (signed msb, then signed lsb): the hex digits
    with the sign bit of each half flipped."""
    h = F.hex(F.unbase64(F.concat(F.translate(uuid, "-_", "+/"), F.lit("=="))))
    flip = _flip_sign
    return F.concat(flip(F.substring(h, 1, 1)), F.substring(h, 2, 15), flip(F.substring(h, 17, 1)),
                    F.substring(h, 18, 15))


def sort_uuids(array: Column) -> Column:
    return F.transform(F.array_sort(F.transform(array, lambda u: F.struct(_uuid_order(u).alias("k"), u.alias("u")))),
                       lambda s: s["u"])


def code(value: Column, maximum: int) -> Column:
    """Kafka ``fromCode``: codes outside ``[0, maximum]`` become UNKNOWN (0)."""
    return F.when(value.between(0, maximum), value).otherwise(F.lit(0))


def _events(ctx: Context, name: str) -> DataFrame:
    """Typed rows that are not in aborted transactions."""
    return ctx.typed(name).where(~F.col("_aborted"))


def small(events: DataFrame) -> DataFrame:
    """The events of a part with few records in one partition: its windows then need no
    shuffle (a single partition is clustered by any key), which saves a Spark stage each."""
    return events.coalesce(1)


def _lookup(mapping: dict, column: Column, default: str) -> Column:
    out: Column | None = None
    for k, v in mapping.items():
        out = (F.when(column == k, F.lit(v)) if out is None else out.when(column == k, F.lit(v)))
    assert out is not None
    return out.otherwise(F.lit(default))


# ---------------------------------------------------------------------------- topics, partitions

PARTITION_FIELDS = ["replicas", "isr", "removing_replicas", "adding_replicas", "leader", "leader_recovery_state",
                    "leader_epoch", "partition_epoch", "directories", "eligible_leader_replicas", "last_known_elr"]


def topic_events(ctx: Context) -> DataFrame:
    """TopicRecords (``_create``) and RemoveTopicRecords, with the previous and next event of
    the same topic id."""
    cols = ["_pos", "offset", "_seq", "_seg", "type", "topic_id", "name", "batch_base_offset", "_create"]
    creates = _events(ctx, "topics").withColumn("_create", F.lit(True))
    removes = (_events(ctx, "topic_removals").withColumn("name", F.lit(None).cast("string"))
               .withColumn("_create", F.lit(False)))
    events = creates.select(*cols).unionByName(removes.select(*cols))
    base = ctx.base_rows("topics", 1)
    if base is not None:
        events = events.unionByName(base.select(
            "_pos", "offset", "_seq", "_seg", F.lit("TOPIC_RECORD").alias("type"), F.col("topicId").alias("topic_id"),
            "name", F.col("offset").alias("batch_base_offset"), F.lit(True).alias("_create")))
    w = window("topic_id")
    return (small(events).withColumn("_prev_create", F.lag("_create").over(w)).withColumn("_prev_name", F.lag("name").over(w))
            .withColumn("_end_pos", F.lead("_pos").over(w)).withColumn("_end_offset", F.lead("offset").over(w)))


def incarnations(ctx: Context, events: DataFrame) -> DataFrame:
    """One row per TopicRecord: the topic from it until the next event of its id (a removal or a
    re-declaration); reports RemoveTopicRecords of ids that are not live and name collisions."""
    removals = events.where(~F.col("_create"))
    ctx.error(removals.where(~F.coalesce(F.col("_prev_create"), F.lit(False))),
              F.concat(F.lit("Unable to delete topic with id "), F.col("topic_id"), F.lit(": no such topic found.")))
    inc = events.where(F.col("_create")).select(
        "topic_id", "name", "offset", "_seq", "_pos", "type", "_seg", F.col("_pos").alias("_c_pos"), "_end_pos",
        "_end_offset", ctx.plan.seg("_end_offset").alias("_end_seg"))
    other = F.broadcast(inc.select(F.col("topic_id").alias("_other"), F.col("name").alias("_other_name"),
                                   F.col("_c_pos").alias("_o_pos"), F.col("_end_pos").alias("_o_end")))
    clash = inc.join(other, (F.col("name") == F.col("_other_name")) & (F.col("topic_id") != F.col("_other"))
                     & (F.col("_o_pos") < F.col("_pos")) & (F.col("_pos") < F.coalesce(F.col("_o_end"), F.lit(_FAR))))
    if ctx.base.kind == "checkpoint":
        clash = clash.where(F.col("offset") > ctx.base.offset)
    ctx.error(clash, F.concat(F.lit("topic name '"), F.col("name"), F.lit("' of topic "), F.col("topic_id"),
                              F.lit(" is already used by topic "), F.col("_other")))
    return inc


def removals(events: DataFrame, plan: Plan) -> DataFrame:
    """Valid RemoveTopicRecords with the removed topic's name and their delta's first offset."""
    return (events.where(~F.col("_create") & F.coalesce(F.col("_prev_create"), F.lit(False)))
            .select("offset", "_pos", F.col("_prev_name").alias("name"),
                    plan.delta_start("offset", "batch_base_offset").alias("_delta")))


def topics(ctx: Context, inc: DataFrame) -> DataFrame:
    rows = inc.withColumn("_seg_to", F.coalesce("_end_seg", F.lit(ctx.plan.m)))
    return expand(rows.select("_seg", "_seg_to", "name", F.col("topic_id").alias("topicId")), "topics")


def partition_events(ctx: Context) -> DataFrame:
    """PartitionRecords (``_full``, absolute) and PartitionChangeRecords; reports records Kafka
    rejects on their own (bad directories size, bad leader recovery state)."""
    empty = F.array().cast("array<int>")
    full = ctx.typed("partitions").select(
        "_pos", "offset", "_seq", "_seg", "_aborted", "type", "topic_id", "partition_id", F.lit(True).alias("_full"),
        *[F.coalesce(F.col(c), empty).alias(c) if c in ("eligible_leader_replicas", "last_known_elr") else F.col(c)
          for c in PARTITION_FIELDS])
    change = ctx.typed("partition_changes").select(
        "_pos", "offset", "_seq", "_seg", "_aborted", "type", "topic_id", "partition_id", F.lit(False).alias("_full"),
        *[F.lit(None).cast("int").alias(c) if c in ("leader_epoch", "partition_epoch") else F.col(c)
          for c in PARTITION_FIELDS])
    events = full.unionByName(change)
    dirs, replicas, lrs = F.col("directories"), F.col("replicas"), F.col("leader_recovery_state")
    bad_dirs = (F.size(dirs) > 0) & (F.size(dirs) != F.size(replicas)) & replicas.isNotNull() & dirs.isNotNull()
    bad_lrs = ~lrs.isin(0, 1) & (F.col("_full") | (lrs != -1))
    ctx.error(events.where(F.coalesce(bad_dirs, F.lit(False)) | bad_lrs), F.when(
        F.coalesce(bad_dirs, F.lit(False)),
        F.concat(F.lit("InvalidReplicaDirectoriesException: "), F.size(dirs).cast("string"),
                 F.lit(" directories for "), F.size(replicas).cast("string"), F.lit(" replicas")))
        .otherwise(F.concat(F.lit("Value "), lrs.cast("string"), F.lit(" is not a valid leader recovery state"))))
    events = events.where(~F.col("_aborted") & ~F.coalesce(bad_dirs, F.lit(False)) & ~bad_lrs).drop("_aborted")
    base = ctx.base_rows("partitions", 2)
    if base is not None:
        events = events.unionByName(base.select(
            "_pos", "offset", "_seq", "_seg", F.lit("PARTITION_RECORD").alias("type"),
            F.col("topicId").alias("topic_id"), F.col("partitionId").alias("partition_id"), F.lit(True).alias("_full"),
            "replicas", "isr", F.col("removingReplicas").alias("removing_replicas"),
            F.col("addingReplicas").alias("adding_replicas"), "leader",
            F.col("leaderRecoveryState").alias("leader_recovery_state"), F.col("leaderEpoch").alias("leader_epoch"),
            F.col("partitionEpoch").alias("partition_epoch"), "directories",
            F.col("eligibleLeaderReplicas").alias("eligible_leader_replicas"),
            F.col("lastKnownElr").alias("last_known_elr")))
    return events


def clear_elr_events(ctx: Context, events: DataFrame, live: DataFrame) -> DataFrame:
    """ClearElrRecords (Kafka ≥ 4.0; ``topicName``, empty = every topic) as one change per
    partition of the live topics they name that exists at that point, setting ELR and
    lastKnownElr to empty (the partition epoch rises only where either was non-empty)."""
    clears = _events(ctx, "clear_elr").select("_pos", "offset", "_seq", "_seg", "type", "topic_name")
    named = (F.col("topic_name") == "") | (F.col("topic_name") == F.col("_topic"))
    at = (F.col("_c_pos") < F.col("_pos")) & (F.col("_pos") < F.coalesce(F.col("_end_pos"), F.lit(_FAR)))
    topics = clears.join(live, named & at)
    ctx.error(clears.where(F.col("topic_name") != "").join(live, named & at, "left_anti"), F.concat(
        F.lit("Unable to clear elr for topic with name "), F.col("topic_name"), F.lit(": no such topic found.")))
    first = (events.where("_full").groupBy("topic_id", "partition_id", "_c_pos").agg(F.min("_pos").alias("_first"))
             .withColumnRenamed("topic_id", "_tid"))
    empty, absent = F.array().cast("array<int>"), F.lit(None).cast("array<int>")
    return (topics.join(first, ["_tid", "_c_pos"]).where(F.col("_first") < F.col("_pos")).select(
        "_pos", "offset", "_seq", "_seg", "type", F.col("_tid").alias("topic_id"), "partition_id",
        F.lit(False).alias("_full"), *[absent.alias(c) for c in ("replicas", "isr", "removing_replicas",
                                                                  "adding_replicas")],
        F.lit(NO_LEADER_CHANGE).alias("leader"), F.lit(-1).alias("leader_recovery_state"),
        F.lit(None).cast("int").alias("leader_epoch"), F.lit(None).cast("int").alias("partition_epoch"),
        F.lit(None).cast("array<string>").alias("directories"), empty.alias("eligible_leader_replicas"),
        empty.alias("last_known_elr"), "_tid", "_topic", "_c_pos", "_end_pos", "_end_seg",
        F.lit(True).alias("_clear")))


def partition_states(ctx: Context, events: DataFrame, inc: DataFrame, skip: DataFrame | None) -> DataFrame:
    """The state of each partition after each of its valid events (``_len_error`` marks merges
    whose replicas and directories lengths differ). ``skip``: ``_pos`` of events to leave out
    (lenient replay of such merges)."""
    if skip is not None:
        events = events.join(F.broadcast(skip), "_pos", "left_anti")
    live = F.broadcast(inc.select(F.col("topic_id").alias("_tid"), F.col("name").alias("_topic"), "_c_pos",
                                  "_end_pos", "_end_seg"))
    joined = events.join(live, (F.col("topic_id") == F.col("_tid")) & (F.col("_c_pos") < F.col("_pos"))
                         & (F.col("_pos") < F.coalesce(F.col("_end_pos"), F.lit(_FAR))), "left")
    ctx.error(joined.where(F.col("_tid").isNull()),
              F.concat(F.when(F.col("_full"), F.lit("PartitionRecord")).otherwise(F.lit("PartitionChangeRecord")),
                       F.lit(" for unknown topic "), F.col("topic_id")))
    key = ("topic_id", "partition_id", "_c_pos")
    joined = joined.where(F.col("_tid").isNotNull()).withColumn("_clear", F.lit(False))
    joined = joined.unionByName(clear_elr_events(ctx, joined, live))
    w = running(*key)
    before = w.rowsBetween(Window.unboundedPreceding, -1)
    had_elr = (F.size(F.last("eligible_leader_replicas", ignorenulls=True).over(before)) > 0) | (
        F.size(F.last("last_known_elr", ignorenulls=True).over(before)) > 0)
    change = ~F.col("_full") & (~F.col("_clear") | F.col("_had_elr"))
    counted = (joined.withColumn("_had_elr", F.coalesce(had_elr, F.lit(False)))
               .withColumn("_gen", F.sum(F.col("_full").cast("int")).over(w))
               .withColumn("_changes", F.sum(change.cast("int")).over(w))
               .withColumn("_leader_changes",
                           F.sum((change & (F.col("leader") != NO_LEADER_CHANGE)).cast("int")).over(w)))
    unknown = counted.where(F.col("_gen") == 0)
    ctx.error(unknown, F.concat(F.lit("unknown partition "), F.col("topic_id"), F.lit(":"),
                                F.col("partition_id").cast("string"), F.lit(" (Unable to find partition "),
                                F.col("topic_id"), F.lit(":"), F.col("partition_id").cast("string"), F.lit(")")))

    def last(c: str | Column) -> Column:
        return F.last(c, ignorenulls=True).over(w)

    states = (counted.where(F.col("_gen") > 0).select(
        "_pos", "offset", "_seq", "_seg", "type", "_full", "_topic", "_end_seg", *key,
        *[last(c).alias(c) for c in ("replicas", "isr", "removing_replicas", "adding_replicas", "directories",
                                     "eligible_leader_replicas", "last_known_elr")],
        last(F.when(F.col("leader") != NO_LEADER_CHANGE, F.col("leader"))).alias("leader"),
        last(F.when(F.col("leader_recovery_state") != -1, F.col("leader_recovery_state"))).alias("leader_recovery_state"),
        (last(F.when(F.col("_full"), F.col("leader_epoch") - F.col("_leader_changes"))) + F.col("_leader_changes"))
        .alias("leader_epoch"),
        (last(F.when(F.col("_full"), F.col("partition_epoch") - F.col("_changes"))) + F.col("_changes"))
        .alias("partition_epoch")))
    dirs = F.col("directories")
    return (states.withColumn("_len_error", ~F.col("_full") & ~all_migrating(dirs)
                              & (F.size(dirs) != F.size("replicas")))
            .withColumn("directories", F.when(all_migrating(dirs), F.array_repeat(F.lit(MIGRATING), F.size("replicas")))
                        .otherwise(dirs)))


def partitions(ctx: Context, states: DataFrame) -> DataFrame:
    """Partition rows per target from the valid states (each until the partition's next event or
    the end of its topic)."""
    ctx.error(states.where("_len_error"), F.lit(LENGTHS_DIFFER))
    rows = state_until_next(states.where(~F.col("_len_error")), "topic_id", "partition_id", "_c_pos",
                            m=ctx.plan.m, end_seg=F.col("_end_seg"))
    return expand(rows.select(
        "_seg", "_seg_to", F.col("_topic").alias("topic"), F.col("topic_id").alias("topicId"),
        F.col("partition_id").alias("partitionId"), "replicas", "isr", F.col("removing_replicas").alias("removingReplicas"),
        F.col("adding_replicas").alias("addingReplicas"), "leader",
        F.col("leader_recovery_state").alias("leaderRecoveryState"), F.col("leader_epoch").alias("leaderEpoch"),
        F.col("partition_epoch").alias("partitionEpoch"), "directories",
        F.col("eligible_leader_replicas").alias("eligibleLeaderReplicas"),
        F.col("last_known_elr").alias("lastKnownElr")), "partitions")


# ---------------------------------------------------------------------------- cluster

_REGISTRATION = ["broker_epoch", "incarnation_id", "is_migrating_zk_broker", "rack", "end_points", "features"]


def brokers(ctx: Context) -> DataFrame:
    """Latest registration per broker, fence/unfence/change events folded onto it (§2)."""
    reg = _events(ctx, "broker_registrations").select(
        "_pos", "offset", "_seq", "_seg", "type", "broker_id", F.lit("reg").alias("_kind"), *_REGISTRATION,
        F.col("fenced").alias("_fenced"), F.col("in_controlled_shutdown").alias("_ics"),
        F.coalesce("log_dirs", F.array().cast("array<string>")).alias("_dirs"))
    base = ctx.base_rows("brokers", 1)
    if base is not None:
        reg = reg.unionByName(base.select(
            "_pos", "offset", "_seq", "_seg", F.lit("REGISTER_BROKER_RECORD").alias("type"),
            F.col("brokerId").alias("broker_id"), F.lit("reg").alias("_kind"), F.col("brokerEpoch").alias("broker_epoch"),
            F.col("incarnationId").alias("incarnation_id"), F.col("isMigratingZkBroker").alias("is_migrating_zk_broker"),
            "rack", F.col("endPoints").alias("end_points"), "features", F.col("fenced").alias("_fenced"),
            F.col("inControlledShutdown").alias("_ics"), F.col("logDirs").alias("_dirs")))
    changes = ctx.typed("broker_changes")
    kind = F.when(F.col("type") == "UNREGISTER_BROKER_RECORD", F.lit("unreg")).otherwise(F.lit("change"))
    bad_fenced = ~F.col("fenced").isin(-1, 0, 1)
    bad_ics = F.coalesce(~F.col("in_controlled_shutdown").isin(0, 1), F.lit(False))
    aborted_bad = changes.where(F.col("_aborted") & (kind == "change") & (bad_fenced | bad_ics))
    changes = changes.where(~F.col("_aborted")).select(
        "_pos", "offset", "_seq", "_seg", "type", "broker_id", kind.alias("_kind"), "broker_epoch",
        *[F.lit(None).alias(c) for c in _REGISTRATION[1:]], F.col("fenced").alias("_fenced_change"),
        F.col("in_controlled_shutdown").alias("_ics_change"), F.col("log_dirs").alias("_dirs_change"))
    cols = ["_pos", "offset", "_seq", "_seg", "type", "broker_id", "_kind", *_REGISTRATION]
    events = (reg.withColumn("_fenced_change", F.lit(None).cast("int")).withColumn("_ics_change", F.lit(None).cast("int"))
              .withColumn("_dirs_change", F.lit(None).cast("array<string>"))
              .unionByName(changes.withColumn("_fenced", F.lit(None).cast("boolean"))
                           .withColumn("_ics", F.lit(None).cast("boolean"))
                           .withColumn("_dirs", F.lit(None).cast("array<string>")), allowMissingColumns=True)
              .select(*cols, "_fenced", "_ics", "_dirs", "_fenced_change", "_ics_change", "_dirs_change"))
    events = small(events)
    w = running("broker_id")
    current = F.last(F.when(F.col("_kind") != "change", F.struct((F.col("_kind") == "reg").alias("live"),
                                                               F.col("broker_epoch").alias("epoch"))),
                     ignorenulls=True).over(w)
    events = events.withColumn("_current", current)
    action = (F.when(F.col("type") == "FENCE_BROKER_RECORD", F.lit("fence"))
              .when(F.col("type") == "UNFENCE_BROKER_RECORD", F.lit("unfence")).otherwise(F.lit("change")))
    is_change = F.col("_kind") == "change"
    unknown = is_change & ~F.coalesce(F.col("_current.live"), F.lit(False))
    stale = is_change & ~unknown & (F.col("_current.epoch") != F.col("broker_epoch"))
    bad_value = is_change & (F.coalesce(~F.col("_fenced_change").isin(-1, 0, 1), F.lit(False))
                             | F.coalesce(~F.col("_ics_change").isin(0, 1), F.lit(False)))
    value_message = F.concat(
        F.lit("Unable to replay BrokerRegistrationChangeRecord(brokerId="), F.col("broker_id").cast("string"),
        F.lit(", brokerEpoch="), F.col("broker_epoch").cast("string"), F.lit("): unknown value for "),
        F.when(~F.col("_fenced_change").isin(-1, 0, 1),
               F.concat(F.lit("fenced field: "), F.col("_fenced_change").cast("string")))
        .otherwise(F.concat(F.lit("inControlledShutdown field: "), F.col("_ics_change").cast("string"))))
    existence = F.concat(F.lit("Tried to "), action, F.lit(" broker "), F.col("broker_id").cast("string"), F.when(
        unknown, F.lit(", but that broker was not registered.")).otherwise(F.concat(
            F.lit(", but the given epoch, "), F.col("broker_epoch").cast("string"),
            F.lit(", did not match the current broker epoch, "), F.col("_current.epoch").cast("string"))))
    ctx.error(events.where(unknown | stale | bad_value), F.when(unknown | stale, existence).otherwise(value_message))
    ctx.error(aborted_bad, F.concat(F.lit("Unable to replay BrokerRegistrationChangeRecord: unknown value for "),
                                    F.when(bad_fenced, F.lit("fenced field")).otherwise(F.lit("inControlledShutdown field"))))
    valid = events.where(~(unknown | stale | bad_value))
    reg_state = F.last(F.when(F.col("_kind") != "change", F.struct(
        (F.col("_kind") == "reg").alias("live"), *[F.col(c) for c in _REGISTRATION])), ignorenulls=True).over(w)
    fenced = F.when(F.col("_kind") == "reg", F.col("_fenced")).when(F.col("_fenced_change") == 1, F.lit(True)) \
        .when(F.col("_fenced_change") == -1, F.lit(False))
    ics = F.when(F.col("_kind") == "reg", F.col("_ics")).when(F.col("_ics_change") == 1, F.lit(True))
    dirs = F.when(F.col("_kind") == "reg", F.col("_dirs")).when(F.size("_dirs_change") > 0, F.col("_dirs_change"))
    states = valid.select(
        "broker_id", "_pos", "_seg", reg_state.alias("r"), F.last(fenced, ignorenulls=True).over(w).alias("fenced"),
        F.last(ics, ignorenulls=True).over(w).alias("inControlledShutdown"),
        F.last(dirs, ignorenulls=True).over(w).alias("_dirs"))
    rows = state_until_next(states, "broker_id", m=ctx.plan.m).where(F.col("r.live"))
    return expand(rows.select(
        "_seg", "_seg_to", F.col("broker_id").alias("brokerId"), F.col("r.broker_epoch").alias("brokerEpoch"),
        F.col("r.incarnation_id").alias("incarnationId"), "fenced", "inControlledShutdown",
        F.col("r.is_migrating_zk_broker").alias("isMigratingZkBroker"), F.col("r.rack").alias("rack"),
        endpoints(F.col("r.end_points")).alias("endPoints"), dedupe_by(F.col("r.features"), "name").alias("features"),
        sort_uuids(F.col("_dirs")).alias("logDirs")), "brokers")


def controllers(ctx: Context) -> DataFrame:
    """Latest RegisterControllerRecord per controller; unknown security protocols rejected."""
    rows = ctx.typed("controllers")
    bad = F.filter("end_points", lambda e: ~e["securityProtocol"].between(0, 3))
    ctx.error(rows.where(F.size(bad) > 0),
              F.concat(F.lit("Unknown security protocol "), bad[0]["securityProtocol"].cast("string")))
    rows = rows.where(~F.col("_aborted") & (F.size(bad) == 0)).select(
        "_pos", "_seg", "controller_id", "incarnation_id", "zk_migration_ready", "end_points", "features")
    base = ctx.base_rows("controllers", 1)
    if base is not None:
        rows = rows.unionByName(base.select(
            "_pos", "_seg", F.col("controllerId").alias("controller_id"), F.col("incarnationId").alias("incarnation_id"),
            F.col("zkMigrationReady").alias("zk_migration_ready"), F.col("endPoints").alias("end_points"), "features"))
    rows = state_until_next(small(rows), "controller_id", m=ctx.plan.m)
    return expand(rows.select(
        "_seg", "_seg_to", F.col("controller_id").alias("controllerId"), F.col("incarnation_id").alias("incarnationId"),
        F.col("zk_migration_ready").alias("zkMigrationReady"), endpoints(F.col("end_points")).alias("endPoints"),
        dedupe_by(F.col("features"), "name").alias("features")), "controllers")


# ---------------------------------------------------------------------------- configs

def config_events(ctx: Context) -> DataFrame:
    """ConfigRecords as (resourceType, resourceName, name, value) events; value null = delete."""
    rows = _events(ctx, "configs").select(
        "_pos", "offset", "_seg", _lookup(RESOURCE_TYPES, F.col("resource_type"), "UNKNOWN").alias("resourceType"),
        F.col("resource_name").alias("resourceName"), "name", "value",
        ctx.plan.delta_start("offset", "batch_base_offset").alias("_delta"))
    base = ctx.base_rows("configs", 1)
    if base is not None:
        rows = rows.unionByName(base.select("_pos", "offset", "_seg", "resourceType", "resourceName", "name", "value",
                                            F.col("offset").alias("_delta")))
    return rows


def quirk_candidates(events: DataFrame, removed: DataFrame) -> DataFrame:
    """Removals whose delta sets a config of the removed topic before them (§1.6: such configs
    survive unless the topic had configs when the delta started)."""
    topic = events.where(F.col("resourceType") == "TOPIC").select(
        F.col("resourceName").alias("name"), F.col("offset").alias("_set"))
    return (removed.join(topic, "name")
            .where((F.col("_delta") <= F.col("_set")) & (F.col("_set") < F.col("offset")))
            .select("name", "offset", "_delta").distinct())


def effective_clears(events: DataFrame, removed: DataFrame, candidates: list[tuple[str, int, int]]) -> set[int]:
    """Offsets of the candidate removals that do clear their topic's configs: those whose topic
    had configs when their delta started. Evaluated on the driver over the few rows of the
    candidates' topics (configs and removals), candidates in log order."""
    names = sorted({c[0] for c in candidates})
    sets = (events.where((F.col("resourceType") == "TOPIC") & F.col("resourceName").isin(*names))
            .select(F.col("resourceName").alias("topic"), F.col("name").alias("key"), "offset",
                    F.col("_pos").alias("pos"), "value").collect())
    clears = removed.where(F.col("name").isin(*names)).select("name", "offset", "_delta").collect()
    effective: set[int] = set()
    for name, offset, delta in sorted(candidates, key=lambda c: c[1]):
        def alive(row) -> bool:
            return row["value"] is not None and not any(
                r["name"] == name and r["offset"] < delta
                and (row["offset"] < r["_delta"] or (r["offset"] in effective and row["offset"] < r["offset"]))
                for r in clears)
        latest: dict[str, object] = {}
        for row in sorted((r for r in sets if r["topic"] == name and r["offset"] < delta), key=lambda r: r["pos"]):
            latest[row["key"]] = row
        if any(alive(row) for row in latest.values()):
            effective.add(offset)
    return effective


def configs(ctx: Context, events: DataFrame, removed: DataFrame, effective: set[int]) -> DataFrame:
    """Latest value per (resource, key); a topic removal ends its topic's configs set before its
    delta (and, if effective, those set in its delta before it)."""
    clears = F.broadcast(removed.select(F.col("name").alias("_name"), F.col("offset").alias("_at"),
                                        F.col("_delta").alias("_d"),
                                        F.col("offset").isin(*effective).alias("_eff") if effective
                                        else F.lit(False).alias("_eff")))
    w = window("resourceType", "resourceName", "name")
    rows = events.withColumn("_next", F.lead("_seg").over(w))
    killed = (rows.where(F.col("resourceType") == "TOPIC")
              .join(clears, (F.col("resourceName") == F.col("_name"))
                    & ((F.col("offset") < F.col("_d")) | (F.col("_eff") & (F.col("offset") < F.col("_at")))))
              .groupBy("resourceName", "name", "_pos").agg(F.min("_at").alias("_kill")))
    rows = rows.join(killed, ["resourceName", "name", "_pos"], "left").withColumn("_kill_seg", ctx.plan.seg("_kill"))
    stop = F.least(F.coalesce("_next", F.lit(ctx.plan.m)), F.coalesce(
        F.when(F.col("_kill").isNotNull(), F.col("_kill_seg")), F.lit(ctx.plan.m)))
    return expand(rows.withColumn("_seg_to", stop).where(F.col("value").isNotNull())
                  .select("_seg", "_seg_to", "resourceType", "resourceName", "name", "value"), "configs")


# ---------------------------------------------------------------------------- small parts

def _default_row(ctx: Context, **values: Column) -> DataFrame:
    """One event at the very start of the pass (an empty image's value)."""
    return (ctx.spark.range(1).select(F.lit(ctx.base.offset * SHIFT).alias("_pos"), F.lit(0).alias("_seg"),
                    *[v.alias(k) for k, v in values.items()]))


def features(ctx: Context) -> DataFrame:
    """Finalized levels (0 removes), metadata.version (never removed; 1 in the empty image)."""
    rows = ctx.typed("features")
    level, mv = F.col("feature_level"), F.col("name") == METADATA_VERSION
    is_level = F.col("type") == "FEATURE_LEVEL_RECORD"
    bad_mv = is_level & mv & (level < 1)
    bad_zk = ~is_level & ~F.col("zk_migration_state").between(0, 4)
    ctx.error(rows.where(bad_mv | bad_zk), F.when(
        bad_mv, F.concat(F.lit("No MetadataVersion with feature level "), level.cast("string"))).otherwise(
        F.concat(F.lit("Value "), F.col("zk_migration_state").cast("string"),
                 F.lit(" is not a valid Zk migration state"))))
    rows = rows.where(~F.col("_aborted") & is_level & ~bad_mv).select("_pos", "_seg", "name", level.alias("level"))
    rows = rows.unionByName(_default_row(ctx, name=F.lit(METADATA_VERSION), level=F.lit(1)))
    base = ctx.base_rows("features", 1)
    if base is not None:
        rows = rows.unionByName(base.select("_pos", "_seg", "name", "level"))
    rows = state_until_next(small(rows), "name", m=ctx.plan.m)
    return expand(rows.where((F.col("level") != 0) | (F.col("name") == METADATA_VERSION)), "features")


def producer_ids(ctx: Context) -> DataFrame:
    """The last ProducerIdsRecord (-1 in the empty image)."""
    rows = _events(ctx, "producer_ids").select("_pos", "_seg", F.col("next_producer_id").alias("nextProducerId"))
    rows = rows.unionByName(_default_row(ctx, nextProducerId=F.lit(-1).cast("long")))
    base = ctx.base_rows("producerIds", 1)
    if base is not None:
        rows = rows.unionByName(base.select("_pos", "_seg", "nextProducerId"))
    return expand(state_until_next(small(rows).withColumn("_k", F.lit(0)), "_k", m=ctx.plan.m), "producerIds")


def client_quotas(ctx: Context) -> DataFrame:
    """Latest value per (entity, key); Remove deletes it (§6)."""
    entity = F.array_sort(dedupe_by(F.col("entity"), "entityType"))
    rows = _events(ctx, "client_quotas").select("_pos", "_seg", entity.alias("_entity"), "key", "value", "remove")
    base = ctx.base_rows("clientQuotas", 1)
    if base is not None:
        as_list = F.array_sort(F.transform(F.map_entries("entity"), lambda e: F.struct(
            e["key"].alias("entityType"), e["value"].alias("entityName"))))
        rows = rows.unionByName(base.select("_pos", "_seg", as_list.alias("_entity"), "key", "value",
                                            F.lit(False).alias("remove")))
    rows = state_until_next(small(rows), "_entity", "key", m=ctx.plan.m).where(~F.col("remove"))
    as_map = F.map_from_entries(F.transform("_entity", lambda e: F.struct(e["entityType"], e["entityName"])))
    return expand(rows.withColumn("entity", as_map), "clientQuotas")


_ACL_FIELDS = {"resourceType": ("resource_type", 7), "resourceName": ("resource_name", None),
               "patternType": ("pattern_type", 4), "principal": ("principal", None), "host": ("host", None),
               "operation": ("operation", 14), "permissionType": ("permission_type", 3)}


def acls(ctx: Context) -> DataFrame:
    """ACLs by id (§7). A removal needs the ACL in the image its delta started from, or added
    earlier in that delta (so a base ACL may be removed twice in one delta, as in Kafka)."""
    add = F.col("type") == "ACCESS_CONTROL_ENTRY_RECORD"
    rows = _events(ctx, "acls").select(
        "_pos", "offset", "_seq", "_seg", "type", "id", add.alias("_add"),
        ctx.plan.delta_start("offset", "batch_base_offset").alias("_delta"),
        *[(code(F.col(c), top) if top is not None else F.col(c)).alias(n) for n, (c, top) in _ACL_FIELDS.items()])
    base = ctx.base_rows("acls", 1)
    if base is not None:
        rows = rows.unionByName(base.select("_pos", "offset", "_seq", "_seg", F.lit("ACCESS_CONTROL_ENTRY_RECORD")
                                            .alias("type"), "id", F.lit(True).alias("_add"),
                                            F.col("offset").alias("_delta"), *_ACL_FIELDS))
    w = window("id")
    rows = small(rows).withColumn("_prev", F.lag("_add").over(w)).withColumn("_prev_delta", F.lag("_delta").over(w))
    rows = rows.withColumn("_at_start", F.coalesce(F.first("_prev").over(running("id", "_delta")), F.lit(False)))
    valid = F.col("_add") | F.coalesce(F.col("_prev"), F.lit(False)) | (
        (F.col("_prev_delta") == F.col("_delta")) & F.col("_at_start"))
    ctx.error(rows.where(~valid), F.concat(F.lit("Failed to find existing ACL with ID "), F.col("id"),
                                           F.lit(" in either image or changes")))
    rows = state_until_next(rows.where(valid), "id", m=ctx.plan.m).where("_add")
    return expand(rows, "acls")


def scram(ctx: Context) -> DataFrame:
    """Credentials by (mechanism, user); unknown mechanism bytes are UNKNOWN (§8)."""
    mechanism = _lookup({k: v for k, v in SCRAM_MECHANISMS.items() if k}, F.col("mechanism"), "UNKNOWN")
    rows = _events(ctx, "scram").select(
        "_pos", "_seg", mechanism.alias("mechanism"), "name", "salt", F.col("stored_key").alias("storedKey"),
        F.col("server_key").alias("serverKey"), "iterations",
        (F.col("type") == "USER_SCRAM_CREDENTIAL_RECORD").alias("_set"))
    base = ctx.base_rows("scram", 1)
    if base is not None:
        rows = rows.unionByName(base.select("_pos", "_seg", "mechanism", "name", "salt", "storedKey", "serverKey",
                                            "iterations", F.lit(True).alias("_set")))
    return expand(state_until_next(small(rows), "mechanism", "name", m=ctx.plan.m).where("_set"), "scram")


def _bad_principal(p: Column) -> Column:
    return F.coalesce(p, F.lit("")).contains(":") == F.lit(False)


def delegation_tokens(ctx: Context) -> DataFrame:
    """Tokens by id; principals must read ``Type:Name`` (§8)."""
    rows = ctx.typed("delegation_tokens")
    is_set = F.col("type") == "DELEGATION_TOKEN_RECORD"
    principals = F.concat(F.array("owner", "requester"), F.coalesce("renewers", F.array().cast("array<string>")))
    bad = F.filter(principals, _bad_principal)
    ctx.error(rows.where(is_set & (F.size(bad) > 0)), F.concat(
        F.lit("expected a string in format principalType:principalName but got "), F.coalesce(bad[0], F.lit(""))))
    rows = rows.where(~F.col("_aborted") & ~(is_set & (F.size(bad) > 0))).select(
        "_pos", "_seg", F.col("token_id").alias("tokenId"), "owner", "requester", "renewers",
        F.col("issue_timestamp").alias("issueTimestamp"), F.col("max_timestamp").alias("maxTimestamp"),
        F.col("expiration_timestamp").alias("expirationTimestamp"), is_set.alias("_set"))
    base = ctx.base_rows("delegationTokens", 1)
    if base is not None:
        rows = rows.unionByName(base.select("_pos", "_seg", "tokenId", "owner", "requester", "renewers",
                                            "issueTimestamp", "maxTimestamp", "expirationTimestamp",
                                            F.lit(True).alias("_set")))
    return expand(state_until_next(small(rows), "tokenId", m=ctx.plan.m).where("_set"), "delegationTokens")


SIMPLE_PARTS: dict[str, Callable[[Context], DataFrame]] = {
    "brokers": brokers, "controllers": controllers, "features": features, "producerIds": producer_ids,
    "clientQuotas": client_quotas, "acls": acls, "scram": scram, "delegationTokens": delegation_tokens,
}
"""Parts that depend on nothing but their own records."""
