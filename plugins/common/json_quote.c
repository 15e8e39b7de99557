/* One JSON string literal for the plugins (see json_quote.h). */
#include "fs_name.h" /* Python.h first */
#include "json_quote.h"

#include <stdlib.h>
#include <string.h>

static int
json_plain(unsigned char c)
{
    return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

/* How many bytes at @p p go out as they are: a valid UTF-8 sequence of
 * two to four; 0 for a byte that needs an escape. A byte that is not part
 * of valid UTF-8 (a file name's, os.fsdecode's U+DCNN) is written as
 * "\udcNN", the form json.dumps gives the str os.fsdecode makes, so
 * json.loads and os.fsencode give the same bytes back. */
static size_t
json_multi(const unsigned char *p)
{
    return *p >= 0x80 ? ptk_kit_utf8_len(p) : 0;
}

static int
json_escape(char *out, unsigned char c)
{
    if (c == '"' || c == '\\') {
        return sprintf(out, "\\%c", c);
    }
    return sprintf(out, c >= 0x80 ? "\\udc%02x" : "\\u%04x", c);
}

char *
ptk_kit_json_quote(const char *s, size_t n)
{
    char *out = malloc(n * 6 + 3);
    if (out == NULL) {
        return NULL;
    }
    char *p = out;
    *p++ = '"';
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        size_t k = 0;
        if (json_plain(c)) {
            *p++ = (char)c;
        }
        else if ((k = json_multi((const unsigned char *)s + i)) > 0 && i + k <= n) {
            memcpy(p, s + i, k);
            p += k;
            i += k - 1;
        }
        else {
            p += json_escape(p, c);
        }
    }
    *p++ = '"';
    *p = '\0';
    return out;
}

/* The runs that need no escape in one fwrite each (a report has thousands
 * of file names; a call per character cost tens of millions of
 * instructions). */
int
ptk_kit_json_write(FILE *f, const char *s)
{
    if (fputc('"', f) == EOF) {
        return -1;
    }
    const unsigned char *p = (const unsigned char *)s;
    for (;;) {
        const unsigned char *run = p;
        size_t k = 0;
        while (*p != 0 && (json_plain(*p) || (k = json_multi(p)) > 0)) {
            p += json_plain(*p) ? 1 : k;
        }
        if (p > run && fwrite(run, 1, (size_t)(p - run), f) != (size_t)(p - run)) {
            return -1;
        }
        if (*p == 0) {
            break;
        }
        char esc[8];
        int len = json_escape(esc, *p);
        if (fwrite(esc, 1, (size_t)len, f) != (size_t)len) {
            return -1;
        }
        p++;
    }
    return fputc('"', f) == EOF ? -1 : 0;
}
