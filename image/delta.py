"""MetadataDelta: routes records to per-part deltas (docs/replay-rules.md, "The model") and applies them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from image.acls import AclsDelta
from image.client_quotas import ClientQuotasDelta
from image.cluster import ClusterDelta
from image.configs import ConfigurationsDelta
from image.delegation_tokens import DelegationTokenDelta
from image.errors import ReplayError
from image.features import FeaturesDelta
from image.image import MetadataImage
from image.producer_ids import ProducerIdsDelta
from image.provenance import MetadataProvenance
from image.release import NEWEST, ReplayRules
from image.scram import ScramDelta
from image.topics import TopicsDelta
from metadata.log.records import LogRecord
from metadata.log.schema.releases import record_description


def undecoded_detail(record: LogRecord) -> str:
    """What a replay reports of a record the reader kept raw (``--skip-unknown``)."""
    what = "" if record.api_key is None else f"{record_description(record.api_key, record.version)} "
    return f"{what}kept raw by --skip-unknown, not replayed"


class _PartDelta(Protocol):
    def finish_snapshot(self) -> None: ...

    def build(self, in_place: bool) -> Any: ...


_PARTS = (
    "features",
    "cluster",
    "topics",
    "configs",
    "client_quotas",
    "producer_ids",
    "acls",
    "scram",
    "delegation_token",
)
"""The nine parts in ``MetadataImage`` order: a part's delta is ``<part>_delta``, made by
``get_or_create_<part>_delta``; its image is the image's attribute of that name (``delegation_tokens`` for
``delegation_token``)."""


class MetadataDelta:
    """Pending changes against ``image``; each part's delta is created on first use.

    Every sub-delta compares against the base ``image`` (never against intermediate states).
    ``rules`` are the Kafka release's (:mod:`image.release`; default: the newest).
    ``snapshot=True`` marks a delta that will be finished with :meth:`finish_snapshot`; it only
    disables the name-collision check against base-image topics (which the snapshot replaces).
    """

    # a delta is made per batch: the parts' deltas start as these class attributes, not one setattr each
    features_delta: FeaturesDelta | None = None
    cluster_delta: ClusterDelta | None = None
    topics_delta: TopicsDelta | None = None
    configs_delta: ConfigurationsDelta | None = None
    client_quotas_delta: ClientQuotasDelta | None = None
    producer_ids_delta: ProducerIdsDelta | None = None
    acls_delta: AclsDelta | None = None
    scram_delta: ScramDelta | None = None
    delegation_token_delta: DelegationTokenDelta | None = None

    def __init__(self, image: MetadataImage, *, rules: ReplayRules = NEWEST, snapshot: bool = False) -> None:
        self.image = image
        self.rules = rules
        self.snapshot = snapshot

    def get_or_create_features_delta(self) -> FeaturesDelta:
        if self.features_delta is None:
            self.features_delta = FeaturesDelta(self.image.features, self.rules)
        return self.features_delta

    def get_or_create_cluster_delta(self) -> ClusterDelta:
        if self.cluster_delta is None:
            self.cluster_delta = ClusterDelta(self.image.cluster)
        return self.cluster_delta

    def get_or_create_topics_delta(self) -> TopicsDelta:
        if self.topics_delta is None:
            self.topics_delta = TopicsDelta(
                self.image.topics,
                check_base_names=not self.snapshot,
                forgets_removed_created_topics=self.rules.forgets_removed_created_topics,
            )
        return self.topics_delta

    def get_or_create_configs_delta(self) -> ConfigurationsDelta:
        if self.configs_delta is None:
            self.configs_delta = ConfigurationsDelta(self.image.configs, self.rules.supports_config)
        return self.configs_delta

    def get_or_create_client_quotas_delta(self) -> ClientQuotasDelta:
        if self.client_quotas_delta is None:
            self.client_quotas_delta = ClientQuotasDelta(self.image.client_quotas)
        return self.client_quotas_delta

    def get_or_create_producer_ids_delta(self) -> ProducerIdsDelta:
        if self.producer_ids_delta is None:
            self.producer_ids_delta = ProducerIdsDelta(self.image.producer_ids)
        return self.producer_ids_delta

    def get_or_create_acls_delta(self) -> AclsDelta:
        if self.acls_delta is None:
            self.acls_delta = AclsDelta(self.image.acls)
        return self.acls_delta

    def get_or_create_scram_delta(self) -> ScramDelta:
        if self.scram_delta is None:
            self.scram_delta = ScramDelta(self.image.scram)
        return self.scram_delta

    def get_or_create_delegation_token_delta(self) -> DelegationTokenDelta:
        if self.delegation_token_delta is None:
            self.delegation_token_delta = DelegationTokenDelta(self.image.delegation_tokens)
        return self.delegation_token_delta

    @property
    def metadata_version_changed(self) -> int | None:
        """The new metadata.version level if this delta changes it."""
        return None if self.features_delta is None else self.features_delta.metadata_version_change

    @property
    def is_empty(self) -> bool:
        """No record touched any part yet."""
        return all(getattr(self, delta) is None for delta, _ in _FIELDS)

    def replay(self, record: LogRecord, location: str | None = None) -> None:
        """Replay one metadata record (Kafka ``MetadataDelta.replay``).

        Raises ReplayError, naming ``location`` (default ``"offset N"``), the record type and the
        problem, where Kafka's replay throws (docs/replay-rules.md, "What is rejected"): the record is inconsistent
        with the image. Any other exception is a bug of this engine and propagates unchanged.
        Transaction markers and control records are not accepted here (the batch loader handles
        them), nor records the reader kept undecoded (``--skip-unknown``: their ReplayError has no record
        type, and the loader reports it without stopping), nor a record type or version the rules' Kafka
        release does not decode.
        """
        handler = _HANDLERS.get(record.type) if record.type is not None else None
        if handler is None:
            where = location or f"offset {record.offset}"
            if record.is_undecoded:
                raise ReplayError(undecoded_detail(record), location=where, offset=record.offset)
            kind = record.type or record.control_type
            raise ReplayError(
                f"Unknown metadata record type {kind}", location=where, offset=record.offset, record_type=kind
            )
        if record.version > self.rules.record_versions.get(record.type, -1):
            raise ReplayError(
                _unknown_to_release(self.rules, record.type, record.version),
                location=location or f"offset {record.offset}",
                offset=record.offset,
                record_type=record.type,
            )
        try:
            handler(self, record.data)
        except ReplayError as error:
            raise error.at(location or f"offset {record.offset}", record.offset, record.type) from None

    def _replay_remove_topic(self, data: Mapping[str, Any]) -> None:
        name = self.get_or_create_topics_delta().replay_remove_topic(data)
        self.get_or_create_configs_delta().replay_remove_topic(name)

    def _replay_zk_migration_state(self, data: Mapping[str, Any]) -> None:
        if self.rules.keeps_zk_migration_state:
            self.get_or_create_features_delta().replay_zk_migration_state(data)

    def _replay_feature_level(self, data: Mapping[str, Any]) -> None:
        features = self.get_or_create_features_delta()
        features.replay_feature_level(data)
        if features.metadata_version_change is not None:
            # Kafka calls handleMetadataVersionChange on every part (all no-ops); the only effect
            # is that every sub-delta now exists.
            for create in _ALL_PARTS:
                create(self)

    def finish_snapshot(self) -> None:
        """Mark as deleted everything of the base image the snapshot did not mention (docs/replay-rules.md)."""
        for create in _ALL_PARTS:
            create(self).finish_snapshot()

    def build(self, provenance: MetadataProvenance, *, in_place: bool) -> MetadataImage:
        """The next image (parts may be live copy-on-write maps). With ``in_place`` the live maps
        of a live base image are updated directly; only the batch loader, which owns that image
        and discards this delta afterwards, uses it."""
        parts = {}
        for field, name in _FIELDS:
            delta: _PartDelta | None = getattr(self, field)
            parts[name] = getattr(self.image, name) if delta is None else delta.build(in_place)
        return MetadataImage(provenance, **parts)

    def apply(self, provenance: MetadataProvenance) -> MetadataImage:
        """The next immutable image; the base image is left untouched."""
        return self.build(provenance, in_place=False).frozen()


def _unknown_to_release(rules: ReplayRules, record_type: str, version: int) -> str:
    """Why a record the decoder read is not one the rules' Kafka release can read."""
    introduced = rules.introduced_by(record_type, version)
    since = f" (written by Kafka {introduced} and later)" if introduced else ""
    if record_type not in rules.record_versions:
        return f"{record_type} is not a record type Kafka {rules.release} knows{since}"
    return (
        f"{record_type} version {version} is not known to Kafka {rules.release} "
        f"(valid: 0-{rules.record_versions[record_type]}){since}"
    )


_IMAGE_PART = {"delegation_token": "delegation_tokens"}
"""A part's image attribute where its name differs from the part's (Kafka's ``delegationTokens``)."""

_FIELDS = tuple((f"{part}_delta", _IMAGE_PART.get(part, part)) for part in _PARTS)
"""Per part, the delta's attribute and the image's."""

_ALL_PARTS: tuple[Callable[[MetadataDelta], _PartDelta], ...] = tuple(
    getattr(MetadataDelta, f"get_or_create_{part}_delta") for part in _PARTS
)

_Handler = Callable[[MetadataDelta, Mapping[str, Any]], None]

_HANDLERS: dict[str, _Handler] = {
    "REGISTER_BROKER_RECORD": lambda d, r: d.get_or_create_cluster_delta().replay_register_broker(r),
    "UNREGISTER_BROKER_RECORD": lambda d, r: d.get_or_create_cluster_delta().replay_unregister_broker(r),
    "FENCE_BROKER_RECORD": lambda d, r: d.get_or_create_cluster_delta().replay_fence_broker(r),
    "UNFENCE_BROKER_RECORD": lambda d, r: d.get_or_create_cluster_delta().replay_unfence_broker(r),
    "BROKER_REGISTRATION_CHANGE_RECORD": lambda d, r: d.get_or_create_cluster_delta().replay_registration_change(r),
    "REGISTER_CONTROLLER_RECORD": lambda d, r: d.get_or_create_cluster_delta().replay_register_controller(r),
    "UNREGISTER_CONTROLLER_RECORD": lambda d, r: d.get_or_create_cluster_delta().replay_unregister_controller(r),
    "TOPIC_RECORD": lambda d, r: d.get_or_create_topics_delta().replay_topic(r),
    "PARTITION_RECORD": lambda d, r: d.get_or_create_topics_delta().replay_partition(r),
    "PARTITION_CHANGE_RECORD": lambda d, r: d.get_or_create_topics_delta().replay_partition_change(r),
    "CLEAR_ELR_RECORD": lambda d, r: d.get_or_create_topics_delta().replay_clear_elr(r),
    "REMOVE_TOPIC_RECORD": MetadataDelta._replay_remove_topic,
    "CONFIG_RECORD": lambda d, r: d.get_or_create_configs_delta().replay_config(r),
    "FEATURE_LEVEL_RECORD": MetadataDelta._replay_feature_level,
    "ZK_MIGRATION_STATE_RECORD": MetadataDelta._replay_zk_migration_state,
    "PRODUCER_IDS_RECORD": lambda d, r: d.get_or_create_producer_ids_delta().replay_producer_ids(r),
    "CLIENT_QUOTA_RECORD": lambda d, r: d.get_or_create_client_quotas_delta().replay_client_quota(r),
    "ACCESS_CONTROL_ENTRY_RECORD": lambda d, r: d.get_or_create_acls_delta().replay_acl(r),
    "REMOVE_ACCESS_CONTROL_ENTRY_RECORD": lambda d, r: d.get_or_create_acls_delta().replay_remove_acl(r),
    "USER_SCRAM_CREDENTIAL_RECORD": lambda d, r: d.get_or_create_scram_delta().replay_credential(r),
    "REMOVE_USER_SCRAM_CREDENTIAL_RECORD": lambda d, r: d.get_or_create_scram_delta().replay_remove_credential(r),
    "DELEGATION_TOKEN_RECORD": lambda d, r: d.get_or_create_delegation_token_delta().replay_token(r),
    "REMOVE_DELEGATION_TOKEN_RECORD": lambda d, r: d.get_or_create_delegation_token_delta().replay_remove_token(r),
    "NO_OP_RECORD": lambda d, r: None,
}
