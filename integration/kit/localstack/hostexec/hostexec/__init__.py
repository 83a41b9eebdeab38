"""hostexec: LocalStack Lambda functions as host processes, without Docker.

LAMBDA_RUNTIME_EXECUTOR=host selects it (entry point namespace
``localstack.lambda.runtime_executor``). :mod:`hostexec.runtime_api` and
:mod:`hostexec.environment` have no LocalStack dependency;
:mod:`hostexec.executor` adapts them to LocalStack's RuntimeExecutor.
"""

__version__ = "0.1.0"
