"""Parquet's Thrift structures, read and written field by field (compact protocol), so that a
hostile-input run can set one field of a footer or a page header to what a damaged or crafted
file claims, the rest of the file left consistent.

    footer, pages = layout(data)        the footer's struct and every page: (start, header,
                                        header length, body length, column chunk)
    set_field(struct, [3, 11], -1)      column chunk meta_data.dictionary_page_offset
    with_footer(data, footer)           the file with this footer
    with_page_header(data, page, hdr)   the file with this page header, its body shortened or
                                        padded so every later offset still holds

A struct is a list of [field id, type, value]; a list or set is (element type, [values]); a
map (key type, value type, [(key, value)]).
"""

STOP, TRUE, FALSE, BYTE, I16, I32, I64, DOUBLE, BINARY, LIST, SET, MAP, STRUCT = range(13)


def read_varint(data, at):
    """The unsigned varint at `at` and where it ends; None (and the end) when it is cut off."""
    value = shift = 0
    while at < len(data):
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at
    return None, at


def varint(value):
    """An unsigned varint's bytes."""
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _varint(data, at):
    value, at = read_varint(data, at)
    if value is None:
        raise ValueError("a varint cut off at the end")
    return value, at


def _zigzag(value):
    return (value >> 1) ^ -(value & 1)


def _read_value(data, at, kind):
    if kind in (TRUE, FALSE):
        # Inside a list a boolean is a byte of its own; a field's is in its header.
        return data[at] == 1, at + 1
    if kind == BYTE:
        return data[at], at + 1
    if kind in (I16, I32, I64):
        value, at = _varint(data, at)
        return _zigzag(value), at
    if kind == DOUBLE:
        return bytes(data[at:at + 8]), at + 8
    if kind == BINARY:
        length, at = _varint(data, at)
        return bytes(data[at:at + length]), at + length
    if kind in (LIST, SET):
        head = data[at]
        at += 1
        size, element = head >> 4, head & 0x0F
        if size == 15:
            size, at = _varint(data, at)
        items = []
        for _ in range(size):
            item, at = _read_value(data, at, element)
            items.append(item)
        return (element, items), at
    if kind == MAP:
        size, at = _varint(data, at)
        if size == 0:
            return (0, 0, []), at
        types = data[at]
        at += 1
        pairs = []
        for _ in range(size):
            key, at = _read_value(data, at, types >> 4)
            value, at = _read_value(data, at, types & 0x0F)
            pairs.append((key, value))
        return (types >> 4, types & 0x0F, pairs), at
    if kind == STRUCT:
        return read_struct(data, at)
    raise ValueError(f"Thrift type {kind} at byte {at}")


def read_struct(data, at=0):
    """The struct at `at`, and where it ends."""
    fields, last = [], 0
    while True:
        head = data[at]
        at += 1
        kind = head & 0x0F
        if kind == STOP:
            return fields, at
        delta = head >> 4
        if delta:
            fid = last + delta
        else:
            raw, at = _varint(data, at)
            fid = _zigzag(raw)
        if kind in (TRUE, FALSE):
            value = kind == TRUE
        else:
            value, at = _read_value(data, at, kind)
        fields.append([fid, kind, value])
        last = fid


def _write_varint(out, value):
    out.extend(varint(value))


def _write_value(out, kind, value):
    if kind in (TRUE, FALSE):
        out.append(1 if value else 2)
    elif kind == BYTE:
        out.append(value & 0xFF)
    elif kind in (I16, I32, I64):
        _write_varint(out, (value << 1) ^ (value >> 63) if value < 0 else value << 1)
    elif kind == DOUBLE:
        out.extend(value)
    elif kind == BINARY:
        _write_varint(out, len(value))
        out.extend(value)
    elif kind in (LIST, SET):
        element, items = value
        if len(items) < 15:
            out.append(len(items) << 4 | element)
        else:
            out.append(0xF0 | element)
            _write_varint(out, len(items))
        for item in items:
            _write_value(out, element, item)
    elif kind == MAP:
        key_type, value_type, pairs = value
        _write_varint(out, len(pairs))
        if pairs:
            out.append(key_type << 4 | value_type)
            for k, v in pairs:
                _write_value(out, key_type, k)
                _write_value(out, value_type, v)
    elif kind == STRUCT:
        out.extend(write_struct(value))
    else:
        raise ValueError(f"Thrift type {kind}")


def write_struct(fields):
    out, last = bytearray(), 0
    for fid, kind, value in fields:
        if kind in (TRUE, FALSE):
            kind = TRUE if value else FALSE
        if 0 < fid - last <= 15:
            out.append((fid - last) << 4 | kind)
        else:
            out.append(kind)
            _write_varint(out, (fid << 1) ^ (fid >> 63) if fid < 0 else fid << 1)
        if kind not in (TRUE, FALSE):
            _write_value(out, kind, value)
        last = fid
    out.append(STOP)
    return bytes(out)


def field(struct, fid):
    return next((f[2] for f in struct if f[0] == fid), None)


def set_field(struct, path, value, kind=I64):
    """Sets the field at `path` (field ids; an int after a list's id picks its element), made
    with `kind` where it is missing."""
    for i, fid in enumerate(path[:-1]):
        entry = next(f for f in struct if f[0] == fid)
        if entry[1] == LIST:
            struct = entry[2][1][path[i + 1]]
            return set_field(struct, path[i + 2:], value, kind)
        struct = entry[2]
    for f in struct:
        if f[0] == path[-1]:
            f[2] = value
            return
    struct.append([path[-1], kind, value])
    struct.sort(key=lambda f: f[0])


def footer_of(data):
    length = int.from_bytes(data[-8:-4], "little")
    return read_struct(data, len(data) - 8 - length)[0]


def with_footer(data, footer):
    length = int.from_bytes(data[-8:-4], "little")
    body = data[:len(data) - 8 - length]
    new = write_struct(footer)
    return body + new + len(new).to_bytes(4, "little") + b"PAR1"


def layout(data):
    """The footer, and every page of every column chunk: (start, header, header length, body
    length, (row group, column))."""
    footer = footer_of(data)
    pages = []
    for g, group in enumerate(field(footer, 4)[1]):
        for c, chunk in enumerate(field(group, 1)[1]):
            meta = field(chunk, 3)
            dictionary, data_at, size = field(meta, 11), field(meta, 9), field(meta, 7)
            at = dictionary if dictionary is not None else data_at
            end = at + size
            while at < end:
                header, body = read_struct(data, at)
                compressed = field(header, 3)
                pages.append((at, header, body - at, compressed, (g, c)))
                at = body + compressed
    return footer, pages


def with_page_header(data, page, header):
    """The file with `page`'s header replaced: a longer header takes its extra bytes off the
    end of the page's body (its compressed size says one less each), a shorter one pads it,
    so the chunk keeps its length and every offset the footer holds stays true."""
    start, _, header_len, body_len, _ = page
    for _ in range(4):
        new = write_struct(header)
        grow = len(new) - header_len
        if body_len - grow < 0:
            return None
        if field(header, 3) == body_len - grow:
            break
        set_field(header, [3], body_len - grow, I32)
    else:
        return None
    body = data[start + header_len:start + header_len + body_len]
    body = body[:len(body) - grow] if grow >= 0 else body + bytes(-grow)
    return data[:start] + new + body + data[start + header_len + body_len:]
