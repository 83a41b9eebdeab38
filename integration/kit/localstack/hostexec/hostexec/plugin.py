"""Plux plugins: the runtime executor "host", and a start hook for host mode."""

from localstack.runtime import hooks
from localstack.services.lambda_.invocation.plugins import RuntimeExecutorPlugin


class HostRuntimeExecutorPlugin(RuntimeExecutorPlugin):
    name = "host"

    def load(self, *args, **kwargs):
        from hostexec.executor import HostRuntimeExecutor

        return HostRuntimeExecutor


@hooks.on_infra_start()
def _hostexec_s3_storage_dir():
    """With HOSTEXEC_S3_STORAGE_DIR set, LocalStack's S3 keeps its object files there.

    LocalStack 4.14 hard-codes /tmp/localstack-s3-storage, which two
    LocalStacks on one machine would share, and which outlives them.
    """
    import os

    target = os.environ.get("HOSTEXEC_S3_STORAGE_DIR")
    if not target:
        return
    from localstack.services.s3 import provider

    os.makedirs(target, exist_ok=True)
    provider.DEFAULT_S3_TMP_DIR = target
