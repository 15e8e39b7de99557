/* Pre-checks of a plugin file before dlopen: see elfcheck.h. */
#include "session/elfcheck.h"

#include <elf.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#if __SIZEOF_POINTER__ == 8
#define PTK__ELFCLASS ELFCLASS64
#else
#define PTK__ELFCLASS ELFCLASS32
#endif
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define PTK__ELFDATA ELFDATA2LSB
#else
#define PTK__ELFDATA ELFDATA2MSB
#endif

static int __attribute__((format(printf, 3, 4)))
refuse(char *why, size_t whylen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
    return -1;
}

/* Checks that every loaded segment (and the dynamic one) of eh lies inside
 * the file; the number of PT_LOAD segments, or -1 with why set. */
static int
check_segments(const unsigned char *head, const ElfW(Ehdr) * eh,
               uint64_t file_size, char *why, size_t whylen)
{
    int loads = 0;
    for (unsigned i = 0; i < eh->e_phnum; i++) {
        ElfW(Phdr) ph;
        memcpy(&ph, head + eh->e_phoff + (size_t)i * sizeof ph, sizeof ph);
        if (ph.p_type != PT_LOAD && ph.p_type != PT_DYNAMIC) {
            continue;
        }
        loads += ph.p_type == PT_LOAD;
        uint64_t end = (uint64_t)ph.p_offset + (uint64_t)ph.p_filesz;
        if (end < ph.p_offset || end > file_size) {
            return refuse(why, whylen,
                          "the file is truncated: a segment ends at byte "
                          "%llu, the file has %llu bytes",
                          (unsigned long long)end,
                          (unsigned long long)file_size);
        }
        if (ph.p_type == PT_LOAD && ph.p_filesz > ph.p_memsz) {
            return refuse(why, whylen,
                          "a segment has %llu bytes in the file but %llu in "
                          "memory",
                          (unsigned long long)ph.p_filesz,
                          (unsigned long long)ph.p_memsz);
        }
    }
    return loads;
}

int
ptk__elf_check(const unsigned char *head, size_t headlen, uint64_t file_size,
               char *why, size_t whylen)
{
    ElfW(Ehdr) eh;
    if (headlen > file_size) {
        headlen = (size_t)file_size;
    }
    if (headlen < SELFMAG || memcmp(head, ELFMAG, SELFMAG) != 0) {
        return refuse(why, whylen, "not an ELF file (%llu bytes)",
                      (unsigned long long)file_size);
    }
    if (headlen >= EI_NIDENT && (head[EI_CLASS] != PTK__ELFCLASS ||
                                 head[EI_DATA] != PTK__ELFDATA)) {
        return refuse(why, whylen,
                      "an ELF file of another class or byte order (class %u, "
                      "data %u)",
                      head[EI_CLASS], head[EI_DATA]);
    }
    if (headlen < sizeof eh) {
        return refuse(why, whylen,
                      "the file is truncated: %llu bytes, shorter than an "
                      "ELF header (%llu)",
                      (unsigned long long)file_size,
                      (unsigned long long)sizeof eh);
    }
    memcpy(&eh, head, sizeof eh);
    if (eh.e_type != ET_DYN) {
        return refuse(why, whylen,
                      "an ELF file of type %u, not a shared object",
                      (unsigned)eh.e_type);
    }
    if (eh.e_phentsize != sizeof(ElfW(Phdr)) || eh.e_phnum == 0 ||
        eh.e_phnum == PN_XNUM) {
        return refuse(why, whylen,
                      "bad program header table (%u entries of %u bytes)",
                      (unsigned)eh.e_phnum, (unsigned)eh.e_phentsize);
    }
    uint64_t ph_end = (uint64_t)eh.e_phoff +
                      (uint64_t)eh.e_phnum * sizeof(ElfW(Phdr));
    if (eh.e_phoff > file_size || ph_end > file_size) {
        return refuse(why, whylen,
                      "the file is truncated: the program headers end at "
                      "byte %llu, the file has %llu bytes",
                      (unsigned long long)ph_end,
                      (unsigned long long)file_size);
    }
    if (ph_end > headlen) {
        return refuse(why, whylen,
                      "the program headers end at byte %llu, past the first "
                      "%llu bytes where a shared object has them",
                      (unsigned long long)ph_end, (unsigned long long)headlen);
    }
    int loads = check_segments(head, &eh, file_size, why, whylen);
    if (loads < 0) {
        return -1;
    }
    if (loads == 0) {
        return refuse(why, whylen, "no loadable segment");
    }
    return 0;
}
