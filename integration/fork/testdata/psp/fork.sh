# The fork's choices, as fork-rehearsal.sh applies them: what the
# checklist's third step writes in infra/config.go, its required setting
# (contract.EffectSettings: its -c name, its variable, a value), and the
# run of the remote-effect scenario that is its own configuration.
desc="payment captures at a PSP: key orderId in the body, lease mode, no lookup, hold (at most once)"
stack=PaymentCaptures namespace=payment-captures mode=ModeLease unknown=UnknownHold
setting=pspUrl setting_env=PSP_URL example=https://psp.example/v1/captures
remote=hold
