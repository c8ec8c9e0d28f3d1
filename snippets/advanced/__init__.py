"""The code of the "Beyond the basics" pages (docs/advanced/)."""
