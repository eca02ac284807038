"""Pure renderers for the twin's Linux, RDMA and GPU tools.

Every function here takes plain data (dicts, lists, strings, numbers) and returns the exact text the real
tool prints for that state. No I/O, no state, no imports of the project's parsers. The tool front-ends in
``dpusim.tools`` build the plain data from the twin's state and call these.

Layouts come from ``../shared/corpus`` (verbatim samples) and its ``FORMAT-*.md`` notes (tool sources); each
module says where a layout detail comes from and which parts are not backed by a capture.
"""
