/* libFuzzer target: the plugin-file pre-check (ptk__elf_check) that runs
 * before dlopen. The input is the file's start; the file size is taken
 * from its first 8 bytes when there are more than 8 (so that truncation
 * and over-long headers are both explored), else the input's length. A
 * refusal always says why; an acceptance means every loadable segment
 * lies inside the file (checked here again, independently). */
#include "session/elfcheck.h"

#include <elf.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t file_size = size;
    if (size > 8) {
        memcpy(&file_size, data, 8);
        file_size %= (uint64_t)size * 2 + 1;
        data += 8;
        size -= 8;
    }
    /* a copy of exactly `size` bytes, so that ASan sees any over-read */
    unsigned char *head = malloc(size ? size : 1);
    if (head == NULL) {
        return 0;
    }
    memcpy(head, data, size);
    char why[256];
    memset(why, 0x55, sizeof why);
    int rc = ptk__elf_check(head, size, file_size, why, sizeof why);
    if (rc < 0) {
        if (memchr(why, '\0', sizeof why) == NULL || why[0] == '\0') {
            abort();
        }
    }
    else {
        size_t have = size < file_size ? size : (size_t)file_size;
        ElfW(Ehdr) eh;
        if (rc != 0 || have < sizeof eh) {
            abort();
        }
        memcpy(&eh, head, sizeof eh);
        if (eh.e_type != ET_DYN || eh.e_phoff + (uint64_t)eh.e_phnum * sizeof(ElfW(Phdr)) > have) {
            abort();
        }
        for (unsigned i = 0; i < eh.e_phnum; i++) {
            ElfW(Phdr) ph;
            memcpy(&ph, head + eh.e_phoff + i * sizeof ph, sizeof ph);
            if (ph.p_type == PT_LOAD && (ph.p_offset + ph.p_filesz > file_size ||
                                          ph.p_offset + ph.p_filesz < ph.p_offset)) {
                abort();
            }
        }
    }
    free(head);
    return 0;
}
