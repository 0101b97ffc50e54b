"""The temporal image on Spark: the sharded build (:mod:`image.spark.build`) and reading it
(:mod:`image.spark.source`)."""
