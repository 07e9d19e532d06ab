"""Pure core: types, ids, verdicts, statistics. No I/O, no adapters."""
