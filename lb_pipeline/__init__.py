"""lb_pipeline: offline replay and recommendations for Apache Pulsar broker load balancing.

The library (this package) holds the domain model, the Pulsar algorithms, the Spark transforms, report
rendering and the CLI. It imports no Dagster: orchestration lives in the sibling ``assets`` package.
"""

__version__ = "0.1.0"
