"""Publishing the labels to the Hugging Face Hub."""
