"""Per-broker consequences of a metadata delta: LocalReplicaChanges (reference and Spark), the
ReplicaManager apply plan, and the ZooKeeper-era control requests (see ``replica/README.md``)."""
