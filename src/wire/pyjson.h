/*
 * wire/pyjson: JSON text read as Python's json.loads reads it, for the
 * startup config (osp_wire_hello_parse) and command payloads
 * (osp_wire_command_parse), whose texts a host compares with the Python
 * worker's. Pure: no I/O, no globals (cJSON_Parse writes process-wide
 * state on every call; this does not, so threads may parse at once).
 */
#ifndef OSP_WIRE_PYJSON_H
#define OSP_WIRE_PYJSON_H

#include <stddef.h>
#include <stdint.h>

struct cJSON;

/*
 * Parse s[0..n) into a cJSON tree: a UTF-8 BOM skipped, UTF-8 checked
 * (encoded surrogates passed), strict JSON plus NaN/Infinity/-Infinity,
 * nesting up to 900 deep, duplicate keys collapsed like a dict (the last
 * value, in the first one's place). Any JSON value is accepted, not only
 * an object. *out is the caller's (cJSON_Delete); NULL on error. Errors:
 * OSP_WIRE_EINVAL with Python's message and position, e.g. "Expecting
 * value: line 1 column 1 (char 0)" or "'utf-8' codec can't decode byte
 * 0xff in position 6: invalid start byte"; OSP_WIRE_ENOMEM with "out of
 * memory". Known gaps: a payload whose first two bytes hold a NUL was
 * UTF-16/32 to Python; a \u0000 ends a cJSON string.
 */
int osp_pyjson_parse(const uint8_t *s, size_t n, struct cJSON **out, char *err, size_t errlen);

#endif
