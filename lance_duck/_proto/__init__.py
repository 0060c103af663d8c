"""Generated protobuf modules (scripts/gen_protos.py). Do not edit."""
