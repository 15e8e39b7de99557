/* libFuzzer target: descriptor validation (ptk__validate_desc), the check
 * every plugin's descriptor goes through after dlopen. The input's bytes
 * fill in a descriptor (sizes, ABI, name, mask, callbacks present or not,
 * options with any type and choices) and the mask to check. The descriptor
 * is handed over in a heap block of exactly its struct_size, so that a
 * read of a member it does not have is a sanitizer report. A refusal
 * always says why; an acceptance means the ABI matches, the descriptor is
 * at least ABI 1.0's size, and every subscribed kind has its callback.
 * Reference kinds are left out (their check asks the running Python). */
#include "session/session.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
ev_cb(void *state, const ptk_event *ev)
{
    (void)state;
    (void)ev;
    return 0;
}

struct reader {
    const uint8_t *p;
    size_t n;
};

static uint32_t
take(struct reader *r, int bytes)
{
    uint32_t v = 0;
    for (int i = 0; i < bytes; i++) {
        v = v << 8 | (r->n ? (r->n--, *r->p++) : 0);
    }
    return v;
}

/* A NUL-terminated string of up to 15 bytes from the input, or NULL. */
static char *
take_str(struct reader *r, char *buf)
{
    uint32_t len = take(r, 1);
    if (len == 0xff) {
        return NULL;
    }
    len %= 16;
    for (uint32_t i = 0; i < len; i++) {
        buf[i] = (char)take(r, 1);
    }
    buf[len] = '\0';
    return buf;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct reader r = {data, size};
    char names[10][16], name[16], where[16];
    ptk_option_spec specs[9];
    ptk_plugin_desc d;
    memset(&d, 0, sizeof d);
    uint32_t sz = take(&r, 1);
    d.struct_size = sz == 0xff ? sizeof d : sz;
    d.abi_major = (uint16_t)take(&r, 1);
    d.abi_minor = (uint16_t)take(&r, 1);
    d.name = take_str(&r, name);
    d.events = take(&r, 4) & ~(unsigned)PTK_MASK_REF;
    unsigned int events = take(&r, 4) & ~(unsigned)PTK_MASK_REF;
    uint32_t cbs = take(&r, 1);
    d.on_event = cbs & 1 ? ev_cb : NULL;
    uint32_t nopt = take(&r, 1) % 9;
    for (uint32_t i = 0; i < nopt; i++) {
        specs[i].name = take_str(&r, names[i]);
        if (specs[i].name == NULL) {
            specs[i].name = "x"; /* NULL ends the list */
        }
        specs[i].type = (ptk_option_type)(int32_t)take(&r, 1) - 1;
        specs[i].default_value = NULL;
        specs[i].help = NULL;
        specs[i].choices = take(&r, 1) & 1 ? "a|b" : NULL;
    }
    specs[nopt].name = NULL;
    d.options = take(&r, 1) & 1 ? specs : NULL;
    size_t block = d.struct_size < sizeof(size_t) ? sizeof(size_t) : d.struct_size;
    unsigned char *heap = malloc(block);
    if (heap == NULL) {
        return 0;
    }
    memset(heap, 0xa5, block);
    memcpy(heap, &d, block < sizeof d ? block : sizeof d);
    const ptk_plugin_desc *dp =
        take(&r, 1) == 0x42 ? NULL : (const ptk_plugin_desc *)heap;
    const size_t size_1_0 = offsetof(ptk_plugin_desc, fini) + sizeof d.fini;
    char *err = NULL;
    int rc = ptk__validate_desc(dp, take_str(&r, where) ? where : "fuzz", events, &err);
    if (rc < 0) {
        if (err == NULL || err[0] == '\0') {
            abort();
        }
    }
    else {
        if (err != NULL || dp == NULL || d.abi_major != PTK_ABI_MAJOR ||
            d.abi_minor > PTK_ABI_MINOR || d.struct_size < size_1_0 ||
            d.name == NULL || d.name[0] == '\0' ||
            (events & ~(unsigned)PTK_MASK_VALID) || (events && d.on_event == NULL)) {
            abort();
        }
    }
    free(err);
    free(heap);
    return 0;
}
