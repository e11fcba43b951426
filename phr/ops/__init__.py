"""The operations: one module per command of ``phr-publish`` (docs/DESIGN.md, "The operations"), each with
``plan(cfg) -> Plan[C]`` and ``run(plan)``; ``phr.api`` finds them by the command."""
