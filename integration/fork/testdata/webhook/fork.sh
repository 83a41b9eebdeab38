# The fork's choices, as fork-rehearsal.sh applies them: what the
# checklist's third step writes in infra/config.go, its required setting
# (contract.EffectSettings: its -c name, its variable, a value), and the
# run of the remote-effect scenario that is its own configuration.
desc="order webhooks to a customer's endpoint: key eventId, lease mode, no lookup, retry (at least once)"
stack=OrderWebhooks namespace=order-webhooks mode=ModeLease unknown=UnknownRetry
setting=webhookUrl setting_env=WEBHOOK_URL example=https://customer.example/hooks/orders
remote=retry
