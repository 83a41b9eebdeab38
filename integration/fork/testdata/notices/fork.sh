# The fork's choices, as fork-rehearsal.sh applies them: what the
# checklist's third step writes in infra/config.go, its required setting
# (contract.EffectSettings: its -c name, its variable, a value), and the
# run of the remote-effect scenario that is its own configuration.
desc="payment notices to a partner: key paymentId, lease mode, reconciled by a lookup (exactly once)"
stack=PaymentNotices namespace=payment-notices mode=ModeLease unknown=UnknownRetry
setting=partnerUrl setting_env=PARTNER_URL example=https://payments.example/notify
remote=reconcile
