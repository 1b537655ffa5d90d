"""What knows no family: kernel, history, knobs and protocol parsing, the family
contract and registry, the checks contract, reading and writing files."""
