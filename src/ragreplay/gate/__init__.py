"""The promotion gate: may this challenger replace the champion? Answer the regression set with both, judge
each pair blind in both orders, and decide the requirement's three bars with honest intervals."""
