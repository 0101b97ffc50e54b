"""Pydantic model of ``MetadataImage.to_json()``: the image JSON shared by the CLI, the Spark engine
and the Java oracle. ``ImageJson.model_validate(doc)`` checks a document strictly (no extra or
missing keys, exact types); ``ImageJson.model_json_schema()`` gives its JSON Schema. Orderings
are documented in image/README.md."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class TopicJson(_Strict):
    name: str
    topicId: str


class PartitionJson(_Strict):
    topic: str
    topicId: str
    partitionId: int
    replicas: list[int]
    isr: list[int]
    removingReplicas: list[int]
    addingReplicas: list[int]
    leader: int
    leaderRecoveryState: Literal[0, 1]
    leaderEpoch: int
    partitionEpoch: int
    directories: list[str]
    eligibleLeaderReplicas: list[int]
    lastKnownElr: list[int]


class EndPointJson(_Strict):
    name: str
    host: str
    port: int
    securityProtocol: int | None


class SupportedFeatureJson(_Strict):
    name: str
    minSupportedVersion: int
    maxSupportedVersion: int


class BrokerJson(_Strict):
    brokerId: int
    brokerEpoch: int
    incarnationId: str
    fenced: bool
    inControlledShutdown: bool
    isMigratingZkBroker: bool
    rack: str | None
    endPoints: list[EndPointJson]
    features: list[SupportedFeatureJson]
    logDirs: list[str]
    cordonedLogDirs: list[str] | None


class ControllerJson(_Strict):
    controllerId: int
    incarnationId: str
    zkMigrationReady: bool
    endPoints: list[EndPointJson]
    features: list[SupportedFeatureJson]


class ConfigJson(_Strict):
    resourceType: Literal["TOPIC", "BROKER", "BROKER_LOGGER", "CLIENT_METRICS", "GROUP", "UNKNOWN"]
    resourceName: str
    name: str
    value: str


class ProducerIdsJson(_Strict):
    nextProducerId: int


class ClientQuotaJson(_Strict):
    entity: dict[str, str | None]
    key: str
    value: float


class AclJson(_Strict):
    id: str
    resourceType: int
    resourceName: str
    patternType: int
    principal: str
    host: str
    operation: int
    permissionType: int


class ScramJson(_Strict):
    mechanism: Literal["SCRAM-SHA-256", "SCRAM-SHA-512", "UNKNOWN"]
    name: str
    salt: str
    storedKey: str
    serverKey: str
    iterations: int


class DelegationTokenJson(_Strict):
    tokenId: str
    owner: str
    requester: str
    renewers: list[str]
    issueTimestamp: int
    maxTimestamp: int
    expirationTimestamp: int


class ImageJson(_Strict):
    """The whole image document."""

    offset: int
    epoch: int
    timestamp: int
    topics: list[TopicJson]
    partitions: list[PartitionJson]
    brokers: list[BrokerJson]
    controllers: list[ControllerJson]
    configs: list[ConfigJson]
    features: dict[str, int]
    producerIds: ProducerIdsJson
    clientQuotas: list[ClientQuotaJson]
    acls: list[AclJson]
    scram: list[ScramJson]
    delegationTokens: list[DelegationTokenJson]
