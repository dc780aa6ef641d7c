"""The reference CDK app (``cdk.json`` runs ``infra/app.py``)."""
