"""The temporal image on Spark: the sharded build (:mod:`image.temporal.spark.build`) and reading it
(:mod:`image.temporal.spark.source`)."""
