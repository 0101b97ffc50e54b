"""MetadataImage: the immutable metadata state and its JSON form (see image/README.md)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from image.acls import AclsImage
from image.client_quotas import ClientQuotaEntity, ClientQuotasImage
from image.cluster import ClusterImage
from image.configs import ConfigurationsImage
from image.delegation_tokens import DelegationTokenImage
from image.errors import ReplayError
from image.features import METADATA_VERSION, FeaturesImage
from image.producer_ids import ProducerIdsImage
from image.provenance import MetadataProvenance
from image.scram import SCRAM_MECHANISMS, ScramImage
from image.topics import TopicsImage


def _entity_sort_key(entity: ClientQuotaEntity) -> tuple[tuple[str, tuple[int, str]], ...]:
    """Entity pairs in type order; a null (default) name sorts before every name."""
    return tuple((entity_type, (0, "") if name is None else (1, name)) for entity_type, name in entity)


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

    def to_json(self) -> dict[str, Any]:
        """The image as the JSON document shared with the CLI, the Spark engine and the Java
        oracle (shape in image/README.md, model in image/json_schema.py)."""
        topics = sorted(self.topics.topics_by_id.values(), key=lambda t: (t.name, t.id))
        partitions = sorted(
            ((t.name, pid, t.id, p) for t in topics for pid, p in t.partitions.items()),
            key=lambda row: row[:3],
        )
        features = dict(sorted(self.features.finalized_versions.items()))
        features[METADATA_VERSION] = self.features.metadata_version_level
        return {
            "offset": self.provenance.last_contained_offset,
            "epoch": self.provenance.last_contained_epoch,
            "timestamp": self.provenance.last_contained_log_time_ms,
            "topics": [{"name": t.name, "topicId": t.id} for t in topics],
            "partitions": [p.to_json(name, topic_id, pid) for name, pid, topic_id, p in partitions],
            "brokers": [b.to_json() for _, b in sorted(self.cluster.brokers.items())],
            "controllers": [c.to_json() for _, c in sorted(self.cluster.controllers.items())],
            "configs": [
                {"resourceType": resource.type, "resourceName": resource.name, "name": key, "value": value}
                for resource, data in sorted(self.configs.resource_data.items())
                for key, value in sorted(data.items())
            ],
            "features": features,
            "producerIds": {"nextProducerId": self.producer_ids.next_producer_id},
            "clientQuotas": [
                {"entity": dict(entity), "key": key, "value": value}
                for entity, quotas in sorted(self.client_quotas.entities.items(), key=lambda e: _entity_sort_key(e[0]))
                for key, value in sorted(quotas.items())
            ],
            "acls": [acl.to_json(acl_id) for acl_id, acl in sorted(self.acls.acls.items())],
            "scram": sorted(
                (
                    {
                        "mechanism": SCRAM_MECHANISMS[mechanism],
                        "name": user,
                        "salt": credential.salt,
                        "storedKey": credential.stored_key,
                        "serverKey": credential.server_key,
                        "iterations": credential.iterations,
                    }
                    for mechanism, users in self.scram.mechanisms.items()
                    for user, credential in users.items()
                ),
                key=lambda row: (row["mechanism"], row["name"]),
            ),
            "delegationTokens": [t.to_json() for _, t in sorted(self.delegation_tokens.tokens.items())],
        }


MetadataImage.EMPTY = MetadataImage()
