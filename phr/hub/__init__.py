"""Publishing to the Hugging Face Hub or a local hub: generic over artifact kinds."""
