# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: files
short_description: Several files (content and mode) and symbolic links in one run
version_added: 0.2.0
description:
  - Makes every file of O(files) hold its content with its mode and every entry of O(links) a symbolic link to
    its target, in one module run (a role's configuration files and unit links together, instead of one
    C(ansible.builtin.template) or C(ansible.builtin.file) task each). Render templates on the controller with
    C(lookup('ansible.builtin.template', ...)) and pass the text as O(files[].content).
  - Every path is checked first (absolute, no C(..), not twice, not an existing directory, no parent that is a
    file); a bad one fails the task before anything is written.
  - Missing parent directories are created with O(dir_mode); existing directories are left as they are.
  - Each file is written atomically (a temporary file in the same directory, renamed over the old one) and only
    when its content differs; a mode that differs is set. A link is replaced atomically when it points elsewhere
    or is not a link. Changed only when something was written.
author:
  - bluefleet developers (!UNKNOWN)
options:
  files:
    description: The files to write.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: The file as the machine sees it (absolute; under O(fs_root)).
        type: path
        required: true
      content:
        description: The whole content of the file (text).
        type: str
        required: true
      mode:
        description: The file's permissions, octal as a string (C('0644')); an existing file with another mode
          gets this one.
        type: raw
        default: '0644'
      validate:
        description:
          - A command that checks the new content before anything is written, as C(ansible.builtin.copy)'s
            C(validate) - C(%s) stands for a temporary file holding it (C(nft -c -f %s)). Split like a shell
            line, run without a shell.
          - Runs only when the content differs from the file's, in check mode too (it writes nothing). When it
            fails or is not installed, the task fails naming the file, the command and its output, and nothing
            of the task is written.
        type: str
  links:
    description: The symbolic links to make.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: The link as the machine sees it (absolute; under O(fs_root)).
        type: path
        required: true
      src:
        description: What the link points to, written into the link as given (C(../x.service) is relative to the
          link's directory, as C(ln -s) takes it; not moved under O(fs_root)).
        type: str
        required: true
  dir_mode:
    description: Permissions of the parent directories the module creates, octal as a string.
    type: raw
    default: '0755'
extends_documentation_fragment:
  - bluefleet.dpu.options.fs_root
attributes:
  check_mode:
    description: Reads every file and link and reports what would change; writes nothing.
    support: full
  diff_mode:
    description: The content of every file (and the target of every link) that changes, before and after.
    support: full
  platform:
    description: Any POSIX machine.
    platforms: posix
    support: full
notes:
  - Owner and group are not managed; a new file belongs to the user the module runs as, a replaced file keeps
    its owner and group where the module may set them.
  - Text only; the content is written as UTF-8.
seealso:
  - module: ansible.builtin.template
  - module: ansible.builtin.file
"""

EXAMPLES = r"""
- name: Write the NCCL files and enable a unit, in one run
  bluefleet.dpu.files:
    files:
      - path: /etc/nccl.conf
        content: "{{ lookup('ansible.builtin.template', 'nccl.conf.j2') }}"
      - path: /usr/local/sbin/apply-settings
        content: "{{ lookup('ansible.builtin.file', 'apply-settings') }}\n"
        mode: '0755'
    links:
      - path: /etc/systemd/system/multi-user.target.wants/apply-settings.service
        src: ../apply-settings.service
  register: written

- name: Reload systemd when the unit file changed
  ansible.builtin.systemd_service:
    daemon_reload: true
  when: "'/etc/systemd/system/apply-settings.service' in written.changed_paths"
"""

RETURN = r"""
changed:
  description: True when a file, mode, link or directory was written (in check mode, would be).
  returned: always
  type: bool
check_mode_prediction:
  description:
    - Only in check mode. True - the resource keys show the state the module predicts after a real run
      (what it would write), not the state before.
  returned: check mode
  type: bool
  sample: true
changed_paths:
  description: The paths (as the machine sees them, as given) of the files and links that changed, in order.
  returned: always
  type: list
  elements: str
  sample: [/etc/nccl.conf]
files:
  description: One entry per file of O(files) - C(path) (as given), C(dest) (under O(fs_root)), C(changed),
    C(created), C(content_changed), C(mode) and C(before_mode) (octal strings; C(before_mode) null for a new file).
  returned: always
  type: list
  elements: dict
links:
  description: One entry per link of O(links) - C(path), C(dest), C(src), C(changed), C(before) (what the link
    pointed to; null when there was no link).
  returned: always
  type: list
  elements: dict
cmd:
  description: The O(files[].validate) commands run, as argv lists, in order (empty when none ran).
  returned: always
  type: list
  elements: list
directories:
  description: The parent directories created (in check mode, that would be), under O(fs_root).
  returned: always
  type: list
  elements: str
diff:
  description: One before/after entry per file or link that changes (headers are the paths).
  returned: when diff mode is on and something changes
  type: list
  elements: dict
"""

import os
import shlex
import stat

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._files import (
    missing_folders,
    octal_mode,
    scratch_file,
    write_file,
    write_link,
)
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import ToolRunner, error_reason
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import (
    fs_root_spec,
    with_change_time,
    without_unasked_diff,
)

LABEL = "write files"


class FilesError(Exception):
    pass


def parse_mode(value, what):
    """An octal mode string ('0644') or an int (YAML's 0644 arrives as 420) -> int; FilesError otherwise."""
    try:
        return octal_mode(value, what)
    except ValueError as exc:
        raise FilesError(str(exc)) from None


def check_path(path, what):
    """Problems of one path as given (absolute, normal, not /)."""
    if not path.startswith("/"):
        return ["%s %r is not absolute; give the path as the machine sees it, starting with /" % (what, path)]
    parts = path.strip("/").split("/")
    if ".." in parts:
        return ["%s %r contains '..'; give the path without it" % (what, path)]
    if path.endswith("/") or not path.strip("/"):
        return ["%s %r names a directory; give a file name" % (what, path)]
    return []


def under_root(fs_root, path):
    return os.path.join(fs_root, os.path.normpath(path).lstrip("/"))


def missing_parents(dest, fs_root):
    """The parent directories of ``dest`` that do not exist, outermost first; FilesError when one is a file."""
    try:
        return missing_folders(dest, fs_root)
    except NotADirectoryError as exc:
        raise FilesError("%s is in the way: a file where a directory is needed; remove it or choose another path"
                         % exc.filename) from None


def read_bytes(path):
    with open(path, "rb") as handle:
        return handle.read()


def validate_argv(command, what):
    """The argv of a validate command (``%s`` once or more); FilesError for one that cannot run."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise FilesError("%s %r cannot be split into arguments (%s); quote it as a shell would"
                         % (what, command, exc)) from None
    if not argv or not any("%s" in arg for arg in argv):
        raise FilesError("%s %r does not name the file to check; put %%s where its path goes (nft -c -f %%s)"
                         % (what, command))
    return argv


def check_content(runner, argv, data, index, path):
    """Run the validate command on ``data`` in a temporary file; FilesError unless it exits 0."""
    with scratch_file(data, os.path.basename(path)) as tmp:
        result = runner.run([arg.replace("%s", tmp) for arg in argv])
    if result.rc != 0:
        lines = (result.stderr.strip() or result.stdout.strip()).replace(tmp, path).splitlines()
        raise FilesError("files[%d].path %s: the new content fails its check (%s): %s%s; fix the content or the "
                         "command" % (index, path, " ".join(argv), error_reason(result).replace(tmp, path),
                                      (" (%s)" % " / ".join(line.strip() for line in lines[-12:]))
                                      if len(lines) > 1 else ""))


def plan(params, runner):
    """Check every entry and read what is there, running each validate command with ``runner`` (its ``cmd`` is
    the result's); FilesError before anything is written."""
    fs_root = params["fs_root"]
    problems = []
    seen = set()
    entries = [("files[%d].path" % i, e) for i, e in enumerate(params["files"])]
    entries += [("links[%d].path" % i, e) for i, e in enumerate(params["links"])]
    for what, entry in entries:
        found = check_path(entry["path"], what)
        problems += found
        if not found:
            norm = os.path.normpath(entry["path"])
            if norm in seen:
                problems.append("%s %r is given twice; give each path once" % (what, entry["path"]))
            seen.add(norm)
    if problems:
        raise FilesError("; ".join(problems))
    dir_mode = parse_mode(params["dir_mode"], "dir_mode")
    checks = {index: validate_argv(entry["validate"], "files[%d].validate" % index)
              for index, entry in enumerate(params["files"]) if entry.get("validate") is not None}
    files = []
    for index, entry in enumerate(params["files"]):
        mode = parse_mode(entry["mode"], "files[%d].mode" % index)
        dest = under_root(fs_root, entry["path"])
        data = entry["content"].encode("utf-8")
        before = before_mode = None
        if os.path.exists(dest):  # a dangling link counts as no file: the new file replaces it
            st = os.stat(dest)
            if not stat.S_ISREG(st.st_mode):
                raise FilesError("files[%d].path %s is %s, not a file; remove it or choose another path"
                                 % (index, dest, "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"))
            before, before_mode = read_bytes(dest), stat.S_IMODE(st.st_mode)
        files.append({"path": entry["path"], "dest": dest, "data": data, "mode": mode, "before": before,
                      "before_mode": before_mode, "content_changed": before != data,
                      "changed": before != data or before_mode != mode})
    for index, argv in checks.items():
        if files[index]["content_changed"]:
            check_content(runner, argv, files[index]["data"], index, files[index]["path"])
    links = []
    for index, entry in enumerate(params["links"]):
        dest = under_root(fs_root, entry["path"])
        if os.path.isdir(dest) and not os.path.islink(dest):
            raise FilesError("links[%d].path %s is a directory; remove it or choose another path" % (index, dest))
        before = os.readlink(dest) if os.path.islink(dest) else None
        links.append({"path": entry["path"], "dest": dest, "src": entry["src"], "before": before,
                      "changed": before != entry["src"]})
    directories = []
    for item in files + links:
        if item["changed"]:
            directories += [d for d in missing_parents(item["dest"], fs_root) if d not in directories]
    return files, links, directories, dir_mode


def apply(files, links, directories, dir_mode):
    for folder in directories:
        os.mkdir(folder)
        os.chmod(folder, dir_mode)  # mkdir's mode goes through the umask
    for item in files:
        if item["content_changed"]:
            write_file(item["dest"], item["data"], mode=item["mode"])
        if stat.S_IMODE(os.stat(item["dest"]).st_mode) != item["mode"]:
            os.chmod(item["dest"], item["mode"])
    for item in links:
        if item["changed"]:
            write_link(item["dest"], item["src"])


def text_of(data):
    return "" if data is None else data.decode("utf-8", errors="replace")


def result_of(files, links, directories):
    diff = []
    for item in files:
        if item["changed"]:
            before = text_of(item["before"])
            after = text_of(item["data"])
            if item["before_mode"] != item["mode"]:
                before = "# mode %s\n%s" % ("(none)" if item["before_mode"] is None else "%04o" % item["before_mode"],
                                            before)
                after = "# mode %04o\n%s" % (item["mode"], after)
            diff.append({"before_header": item["path"], "after_header": item["path"], "before": before,
                         "after": after})
    for item in links:
        if item["changed"]:
            diff.append({"before_header": item["path"], "after_header": item["path"],
                         "before": "" if item["before"] is None else "-> %s\n" % item["before"],
                         "after": "-> %s\n" % item["src"]})
    changed_paths = [i["path"] for i in files + links if i["changed"]]
    return {
        "changed": bool(changed_paths or directories),
        "changed_paths": changed_paths,
        "files": [{"path": i["path"], "dest": i["dest"], "changed": i["changed"], "created": i["before"] is None,
                   "content_changed": i["content_changed"], "mode": "%04o" % i["mode"],
                   "before_mode": None if i["before_mode"] is None else "%04o" % i["before_mode"]} for i in files],
        "links": [{"path": i["path"], "dest": i["dest"], "src": i["src"], "changed": i["changed"],
                   "before": i["before"]} for i in links],
        "directories": directories,
        "diff": diff,
    }


def run_files(params, check_mode, runner):
    """Plan, then (not in check mode) write; the result. FilesError / OSError propagate."""
    files, links, directories, dir_mode = plan(params, runner)
    if not check_mode:
        apply(files, links, directories, dir_mode)
    return result_of(files, links, directories)


def argument_spec():
    return {
        "files": {"type": "list", "elements": "dict", "default": [], "options": {
            "path": {"type": "path", "required": True},
            "content": {"type": "str", "required": True},
            "mode": {"type": "raw", "default": "0644"},
            "validate": {"type": "str"},
        }},
        "links": {"type": "list", "elements": "dict", "default": [], "options": {
            "path": {"type": "path", "required": True},
            "src": {"type": "str", "required": True},
        }},
        "dir_mode": {"type": "raw", "default": "0755"},
        "fs_root": fs_root_spec(),
    }


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    runner = ToolRunner()
    try:
        result = run_files(module.params, module.check_mode, runner)
    except FilesError as exc:
        module.fail_json(msg="%s failed: %s; nothing was written" % (LABEL, exc), cmd=runner.cmd)
    except OSError as exc:
        module.fail_json(msg="%s failed: %s; run as a user who may write there" % (LABEL, exc), cmd=runner.cmd)
    result["cmd"] = runner.cmd
    if not result["diff"]:
        result.pop("diff")
    if module.check_mode:
        result["check_mode_prediction"] = True
    module.exit_json(**without_unasked_diff(module, with_change_time(module, result)))


if __name__ == "__main__":
    main()
