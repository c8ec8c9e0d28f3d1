"""The tested code behind every page of the site.

One subpackage per page (`snippets.basics.devices_and_meshes` for "Devices and meshes", ...). Pages include named
sections of these modules; `tests/` imports the same modules and asserts what they do; the
docs build runs each page's sections in order to produce the output shown under every block.
"""
