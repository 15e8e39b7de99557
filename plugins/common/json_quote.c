/* One JSON string literal for the plugins (see json_quote.h). */
#include "json_quote.h"

#include <stdlib.h>

static int
json_plain(unsigned char c)
{
    return c >= 0x20 && c != '"' && c != '\\';
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
        if (json_plain(c)) {
            *p++ = (char)c;
        }
        else if (c == '"' || c == '\\') {
            *p++ = '\\';
            *p++ = (char)c;
        }
        else {
            p += sprintf(p, "\\u%04x", c);
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
        while (*p != 0 && json_plain(*p)) {
            p++;
        }
        if (p > run && fwrite(run, 1, (size_t)(p - run), f) != (size_t)(p - run)) {
            return -1;
        }
        if (*p == 0) {
            break;
        }
        int rc = *p == '"' || *p == '\\' ? fprintf(f, "\\%c", *p)
                                         : fprintf(f, "\\u%04x", *p);
        if (rc < 0) {
            return -1;
        }
        p++;
    }
    return fputc('"', f) == EOF ? -1 : 0;
}
