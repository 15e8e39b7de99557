/*
 * The coverage plugin's static analysis, in C: which lines of a tree of code
 * objects could run, and where each conditional jump can lead (see
 * analyze.c). analysis.py holds the same analysis in Python; it is the
 * reference the C one is checked against (PYTRACEKIT_COVERAGE_ANALYSIS=python
 * makes the plugin use it).
 */
#ifndef PTK_COVERAGE_ANALYZE_H
#define PTK_COVERAGE_ANALYZE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>

/* What the analysis needs to know of an opcode (cov_optable.flags). */
enum {
    AN_JREL = 1,      /* relative jump (dis.hasjrel) */
    AN_JABS = 2,      /* absolute jump (dis.hasjabs) */
    AN_BACK = 4,      /* a relative jump backwards (JUMP_BACKWARD*) */
    AN_COND = 8,      /* a conditional jump (POP_JUMP*, JUMP_IF*, FOR_ITER) */
    AN_EXIT = 16,     /* leaves the code object (RETURN_VALUE, RETURN_CONST) */
    AN_NOFALL = 32,   /* never goes on to the next instruction */
    AN_EXTENDED = 64, /* EXTENDED_ARG */
    AN_RESUME = 128   /* RESUME */
};

/* The interpreter's opcodes, as the analysis sees them (filled from its
 * opcode module when the plugin starts). */
typedef struct cov_optable {
    uint8_t flags[256];   /* AN_* */
    uint8_t caches[256];  /* inline cache entries after each opcode */
    int jump_adds_caches; /* a relative jump counts from after its caches (3.12+) */
} cov_optable;

/* Where the analysis puts what it finds. Each callback returns 0, or -1
 * with a Python error set (the analysis stops). */
typedef struct cov_an_sink {
    void *ctx;
    /* A code object of the tree, root first, then its nested ones in source
     * order: the offset of its first RESUME (-1: none) and the lines that
     * can produce a LINE event in it alone, sorted. */
    int (*code)(void *ctx, PyCodeObject *code, int32_t start, const int32_t *own,
                int32_t nown);
    /* A line of that code object with a conditional jump and at least two
     * destinations: lines ascending, then the exit (-firstline), if any. */
    int (*branch)(void *ctx, int32_t line, const int32_t *dest, int32_t ndest);
} cov_an_sink;

/* Analyses @p root and every code object nested in it (through co_consts).
 * Branches only with @p want_arcs. 0, or -1 with a Python error set. */
int cov_analyze(const cov_optable *ops, PyCodeObject *root, int want_arcs,
                const cov_an_sink *sink);

#endif
