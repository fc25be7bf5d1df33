"""Auditing the record: checking chains and closings, exports and evidence, and who audits."""
