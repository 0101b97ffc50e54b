"""MetadataImage: the immutable metadata state and its JSON form (see image/README.md)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from image import parts
from image.acls import AclsImage
from image.client_quotas import ClientQuotaEntity, ClientQuotasImage
from image.cluster import ClusterImage
from image.configs import ConfigResource, ConfigurationsImage
from image.cow import read_only
from image.delegation_tokens import DelegationTokenImage
from image.errors import ReplayError
from image.features import METADATA_VERSION, FeaturesImage
from image.partition import PartitionRegistration
from image.parts import Row
from image.producer_ids import ProducerIdsImage
from image.provenance import MetadataProvenance
from image.release import NEWEST, ReplayRules
from image.scram import ScramCredentialData, ScramImage
from image.topics import TopicImage, TopicsImage


@dataclass(frozen=True, slots=True)
class MetadataImage:
    """Kafka ``MetadataImage``: provenance plus the nine parts.

    ``errors`` lists the records skipped by a lenient replay that produced this image; it is not
    part of the image's value (ignored by equality and JSON).
    """

    provenance: MetadataProvenance = MetadataProvenance.EMPTY
    features: FeaturesImage = FeaturesImage.EMPTY
    cluster: ClusterImage = ClusterImage.EMPTY
    topics: TopicsImage = TopicsImage.EMPTY
    configs: ConfigurationsImage = ConfigurationsImage.EMPTY
    client_quotas: ClientQuotasImage = ClientQuotasImage.EMPTY
    producer_ids: ProducerIdsImage = ProducerIdsImage.EMPTY
    acls: AclsImage = AclsImage.EMPTY
    scram: ScramImage = ScramImage.EMPTY
    delegation_tokens: DelegationTokenImage = DelegationTokenImage.EMPTY
    errors: tuple[ReplayError, ...] = field(default=(), compare=False, repr=False)

    EMPTY: ClassVar[MetadataImage]

    @property
    def offset(self) -> int:
        """Last contained offset (-1 for the empty image)."""
        return self.provenance.last_contained_offset

    def frozen(self) -> MetadataImage:
        """This image with every part read-only (a live image's maps are snapshotted)."""
        return replace(
            self,
            features=self.features.frozen(),
            cluster=self.cluster.frozen(),
            topics=self.topics.frozen(),
            configs=self.configs.frozen(),
            client_quotas=self.client_quotas.frozen(),
            acls=self.acls.frozen(),
            scram=self.scram.frozen(),
            delegation_tokens=self.delegation_tokens.frozen(),
        )

    def rows(self) -> dict[str, list[Row]]:
        """Every part as rows in the field names of the image JSON (unsorted; the hidden
        ``topicNames`` part included, see :mod:`image.parts`)."""
        topics = self.topics.topics_by_id.values()
        features = [parts.feature_row(n, v) for n, v in self.features.finalized_versions.items()]
        if self.features.metadata_version_level is not None:
            features.append(parts.feature_row(METADATA_VERSION, self.features.metadata_version_level))
        return {
            "topics": [parts.topic_row(t) for t in topics],
            "partitions": [p.to_json(t.name, t.id, pid) for t in topics for pid, p in t.partitions.items()],
            "brokers": [b.to_json() for b in self.cluster.brokers.values()],
            "controllers": [c.to_json() for c in self.cluster.controllers.values()],
            "configs": [
                parts.config_row(r, k, v) for r, data in self.configs.resource_data.items() for k, v in data.items()
            ],
            "features": features,
            "producerIds": [parts.producer_ids_row(self.producer_ids.next_producer_id)],
            "clientQuotas": [
                parts.quota_row(e, k, v) for e, quotas in self.client_quotas.entities.items() for k, v in quotas.items()
            ],
            "acls": [acl.to_json(acl_id) for acl_id, acl in self.acls.acls.items()],
            "scram": [parts.scram_row(m, u, c) for m, users in self.scram.mechanisms.items() for u, c in users.items()],
            "delegationTokens": [t.to_json() for t in self.delegation_tokens.tokens.values()],
            "topicNames": [parts.topic_name_row(n, t.id) for n, t in self.topics.topics_by_name.items()],
        }

    @classmethod
    def from_rows(cls, rows: Mapping[str, Iterable[Row]], provenance: MetadataProvenance) -> MetadataImage:
        """The image whose :meth:`rows` are ``rows``: exact for every replay rule (what the rows do not
        keep, the ZooKeeper migration state and Java object identities, no rule reads back)."""
        partitions: dict[str, dict[int, PartitionRegistration]] = {}
        for r in rows.get("partitions", ()):
            partitions.setdefault(r["topicId"], {})[r["partitionId"]] = parts.partition(r)
        by_id = {
            r["topicId"]: TopicImage(r["name"], r["topicId"], read_only(partitions.get(r["topicId"], {})))
            for r in rows.get("topics", ())
        }
        # only the id of a name-index entry is ever read back (image.parts)
        by_name = {
            r["name"]: by_id.get(r["topicId"]) or TopicImage(r["name"], r["topicId"])
            for r in rows.get("topicNames", ())
        }
        features = {r["name"]: r["level"] for r in rows.get("features", ())}
        metadata_version = features.pop(METADATA_VERSION, None)
        configs: dict[ConfigResource, dict[str, str]] = {}
        for r in rows.get("configs", ()):
            configs.setdefault(ConfigResource(r["resourceType"], r["resourceName"]), {})[r["name"]] = r["value"]
        quotas: dict[ClientQuotaEntity, dict[str, float]] = {}
        for r in rows.get("clientQuotas", ()):
            quotas.setdefault(parts.quota_entity_key(r["entity"]), {})[r["key"]] = r["value"]
        scram: dict[int, dict[str, ScramCredentialData]] = {}
        for r in rows.get("scram", ()):
            mechanism, user, credential = parts.scram_credential(r)
            scram.setdefault(mechanism, {})[user] = credential
        producer = list(rows.get("producerIds", ()))
        return cls(
            provenance=provenance,
            features=FeaturesImage(read_only(features), metadata_version),
            cluster=ClusterImage(
                read_only({r["brokerId"]: parts.broker(r) for r in rows.get("brokers", ())}),
                read_only({r["controllerId"]: parts.controller(r) for r in rows.get("controllers", ())}),
            ),
            topics=TopicsImage(read_only(by_id), read_only(by_name)),
            configs=ConfigurationsImage(read_only({k: read_only(v) for k, v in configs.items()})),
            client_quotas=ClientQuotasImage(read_only({k: read_only(v) for k, v in quotas.items()})),
            producer_ids=ProducerIdsImage(producer[0]["nextProducerId"] if producer else -1),
            acls=AclsImage(read_only({r["id"]: parts.acl(r) for r in rows.get("acls", ())})),
            scram=ScramImage(read_only({k: read_only(v) for k, v in scram.items()})),
            delegation_tokens=DelegationTokenImage(
                read_only({r["tokenId"]: parts.delegation_token(r) for r in rows.get("delegationTokens", ())})
            ),
        )

    def to_json(self) -> dict[str, Any]:
        """The image JSON document (``image/README.md``), assembled by :func:`image.parts.assemble`."""
        p = self.provenance
        return parts.assemble(
            self.rows(), p.last_contained_offset, p.last_contained_epoch, p.last_contained_log_time_ms
        )


MetadataImage.EMPTY = MetadataImage()
"""The empty image of Kafka 4.0+ (no metadata.version); :func:`empty_image` gives any release's."""


def empty_image(rules: ReplayRules = NEWEST) -> MetadataImage:
    """Kafka's ``MetadataImage.EMPTY`` under ``rules``: 3.9's holds metadata.version ``3.0-IV1``, 4.0+'s none."""
    if rules.empty_metadata_version is None:
        return MetadataImage.EMPTY
    return MetadataImage(features=FeaturesImage(metadata_version_level=rules.empty_metadata_version))
