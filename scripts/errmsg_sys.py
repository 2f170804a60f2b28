#!/usr/bin/env python3
"""MariaDB's compiled English message file written back as catalog text, for catalog_corpus.py.

usage: errmsg_sys.py ERRMSG_SYS MYSQLD_ERROR_H > errmsg-utf8.txt

Debian's packages carry the catalog compiled, not as `sql/share/errmsg-utf8.txt`:
`apt-get download mariadb-server-core libmariadb-dev`, then `dpkg-deb -x` each, give
`usr/share/mysql/english/errmsg.sys` (the messages) and `usr/include/mariadb/mysqld_error.h`
(their names by code). errmsg.sys as comp_err.c writes it: a 32-byte head whose bytes 6-9 are
the messages' total length, then the count of each of four sections of codes (starting at 1000,
2000, 3000 and 4000) as 2-byte numbers, a 2-byte length for every message, and the messages,
each ended by a NUL byte. Codes without a name in the header are left out (and counted).
"""
import re
import struct
import sys

SECTION_STARTS = (1000, 2000, 3000, 4000)


def messages(path):
    """(code, message) of every message in a compiled errmsg.sys."""
    data = open(path, "rb").read()
    if data[:2] != b"\xfe\xfe":
        sys.exit(f"{path}: not a compiled MariaDB message file (no 0xFEFE head)")
    text_length = struct.unpack_from("<I", data, 6)[0]
    counts = struct.unpack_from("<4H", data, 32)
    texts = data[len(data) - text_length:].split(b"\0")[:-1]
    codes = [code for start, n in zip(SECTION_STARTS, counts) for code in range(start, start + n)]
    if len(codes) != len(texts):
        sys.exit(f"{path}: the head counts {len(codes)} messages, the file holds {len(texts)}")
    return zip(codes, (t.decode("utf-8") for t in texts))


def names(path):
    """Error name by code, from `#define ER_NAME code` lines (section markers skipped)."""
    found = {}
    for line in open(path, encoding="utf-8"):
        m = re.match(r"#define (\w+) (\d+)\s*$", line)
        if m and not m.group(1).startswith(("ER_ERROR_FIRST", "ER_ERROR_LAST")):
            found.setdefault(int(m.group(2)), m.group(1))
    return found


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.split("\n\n")[1])
    by_code = names(sys.argv[2])
    unnamed = 0
    for code, message in messages(sys.argv[1]):
        name = by_code.get(code)
        if name is None:
            unnamed += 1
            continue
        quoted = message.replace('"', '\\"').replace("\n", "\\n")
        sys.stdout.write(f'{name}\n        eng "{quoted}"\n')
    print(f"{unnamed} codes without a name left out", file=sys.stderr)


if __name__ == "__main__":
    main()
