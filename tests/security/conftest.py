"""The security tier: adversarial tests, written as an attacker would act.

Each module here takes one boundary of the store (tenant isolation, S3
pointers, leases and fencing, idempotency, bounded reads, chain walks,
deletion finality) and attacks it with the means the threat model in
``docs/security.md`` grants the attacker: raw writes with its own tenant's
grant, paused or clock-skewed processes, crafted items. Each attack test
here failed on the code before its fix; the few guards that already held
(kept so that they keep holding) say so in their module.
"""
