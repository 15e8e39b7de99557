/* The sys.monitoring backend (PEP 669, CPython 3.12+). One tool id, and
 * for each monitoring event a C-implemented vectorcall object, so that an
 * event costs one C call and no Python frame; frame objects are made only
 * when a plugin asks for one (ptk_host::event_frame). It makes the same
 * ptk_event records the legacy backend makes, following what CPython's own
 * legacy layer (Python/legacy_tracing.c) reports for PyEval_SetProfile and
 * PyEval_SetTrace:
 *
 *   PY_START, PY_RESUME, PY_THROW      -> CALL   (origin start/resume/throw)
 *   PY_RETURN, PY_YIELD, PY_UNWIND     -> RETURN (arg NULL on unwind)
 *   CALL, C_RETURN, C_RAISE            -> C_CALL, C_RETURN, C_EXCEPTION, for
 *                                         builtin functions and method
 *                                         descriptors (bound, as legacy does)
 *   LINE, and a JUMP backwards within one line -> LINE
 *   RAISE, STOP_ITERATION              -> EXCEPTION ((type, value, tb))
 *   INSTRUCTION                        -> OPCODE
 *
 * Only the events some subscriber needs are enabled. PTK_DISABLE becomes
 * sys.monitoring.DISABLE at a location once every subscriber of the kind
 * has disabled it there; when a later table brings a new subscriber,
 * sys.monitoring.restart_events() switches those locations back on. */
#include "backends/backends.h"
#include "core/deliver.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct mon_cb {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    int what; /* origin (CALL, RETURN) or kind (C_RETURN, C_EXCEPTION) */
} mon_cb;

static PyTypeObject mon_cb_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pytracekit.MonitoringCallback",
    .tp_basicsize = sizeof(mon_cb),
    .tp_vectorcall_offset = offsetof(mon_cb, vectorcall),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL |
                Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .tp_call = PyVectorcall_Call,
    .tp_doc = "A pytracekit sys.monitoring callback (implemented in C).",
};

static int tool = -1;             /* the tool id we hold */
static PyObject *mon_module;      /* sys.monitoring */
static PyObject *mon_DISABLE, *mon_MISSING;
static int mon_disabled;          /* DISABLE returned for a subscriber since
                                     the last restart_events() */
static uint64_t seen_serial;      /* newest subscriber the last sync saw */
static int prev_track;
static int prev_shadow;           /* the last sync's table kept the stacks */
static unsigned long prev_events;
/* CPython 3.13.0 reports no LINE for a line whose first instruction is the
 * RESUME of its code object (a one-line function, a class body, a
 * generator expression) unless PY_START is enabled too, and not again once
 * PY_START is disabled there. Found by a probe when the tool id is claimed.
 * The RESUME after a yield is the same with PY_RESUME (a loop whose line
 * starts there lost its LINE events: coverage.oracle.loops.counts), so
 * both are kept where this holds. */
static int line_needs_start;

/* Per-code events. When every subscriber judges code (a filter, say the
 * coverage plugin's files: t->dead_possible), the events that fire per
 * location -- LINE, JUMP, BRANCH, INSTRUCTION -- are not set for the whole
 * interpreter but per code object (sys.monitoring.set_local_events), once
 * the filters have selected it: at its first PY_START / PY_RESUME, or at a
 * sync for the frames running then. Code no subscriber wants costs one
 * PY_START, switched off there, and none of its lines fire. With the events
 * set globally each of its lines fired once before it was switched off,
 * and on 3.12/3.13 a line 127 or more lines below the first line of its
 * code object costs CPython a walk of the line table before the callback
 * (PyCode_Addr2Line): in a unittest run of CPython's own suites that was
 * most of the tracing cost, in the module bodies of the standard library
 * (locale's alias table, _sysconfigdata, typing). */
static unsigned long local_want;  /* per-code events now; 0: all global */
static uint32_t local_gen;        /* changes with local_want; 0 never used */
static uint64_t local_walked;     /* ptk__table_gen of the last frame walk */
static PyObject *mon_set_local;   /* sys.monitoring.set_local_events */
static int local_broken;          /* set_local_events failed: all global */

static int mon_call_method(const char *name, const char *fmt, ...);
static void local_update(PyCodeObject *code, void *arg);

/* This backend's part of a thread's running record (ptk__thread_hot::be):
 * the events of its PY_START / PY_RESUME / PY_THROW, of its PY_RETURN /
 * PY_YIELD / PY_UNWIND and of its C calls, made once (mon_thread_hot_init)
 * and reused: each event writes only the fields that change. The
 * callbacks of a thread never nest (CPython runs none while one runs), so
 * one of each is enough. */
typedef struct mon_hot {
    ptk_event ev_call, ev_return;
    ptk__event_at ev_c;
} mon_hot;
_Static_assert(sizeof(mon_hot) <= PTK__THREAD_HOT_PRIVATE,
               "mon_hot does not fit in ptk__thread_hot::be");
#define MON_HOT(th) PTK__PRIVATE((th)->hot->be, mon_hot)

static void
mon_thread_hot_init(ptk__thread *th)
{
    mon_hot *h = MON_HOT(th);
    memset(h, 0, sizeof *h);
    ptk__event_blank(&h->ev_call, &th->pub, PTK_EV_CALL);
    h->ev_call.arg = Py_None;
    ptk__event_blank(&h->ev_return, &th->pub, PTK_EV_RETURN);
    ptk__event_blank(&h->ev_c.ev, &th->pub, PTK_EV_C_CALL);
    h->ev_c.ev.lasti_ = PTK__LASTI_AT;
}

/* ---- turning monitoring events into ptk_event ------------------------- */

/* An offset or a line number: a compact int, read inline where possible. */
static inline long
small_int(PyObject *o)
{
#if PTK_HAVE_LONG_COMPACT
    if (PyUnstable_Long_IsCompact((PyLongObject *)o)) {
        return (long)PyUnstable_Long_CompactValue((PyLongObject *)o);
    }
#endif
    return PyLong_AsLong(o);
}

/* None is immortal on 3.12+ (PEP 683): its reference count is not kept, so
 * the new reference a callback returns needs no increment. */
static inline PyObject *
none(void)
{
    return Py_None;
}

static PyObject *
disable(int for_subscriber)
{
    mon_disabled |= for_subscriber;
    return Py_NewRef(mon_DISABLE);
}

/* A new thread's first events come before threading has registered it
 * (nothing here is called from threading's start hook, unlike the legacy
 * backend), so its name is looked up again at its next events, a bounded
 * number of times (threads threading never knows stay unnamed). */
#define NAME_TRIES 64

static void
thread_slow(ptk__thread *th)
{
    th->skip_frame = NULL;
    if (!th->name_tried || th->name_retry) {
        ptk__thread_set_name(th);
        th->name_tries++;
    }
    th->slow = th->name_storage == NULL && th->name_retry &&
               th->name_tries < NAME_TRIES;
}

/* A thread with no watch yet (or whose watch could not be made), or slow. */
static __attribute__((noinline)) void
thread_check(ptk__thread *th)
{
    if (th->tstate_watch == NULL) {
        ptk__thread_watch(th);
    }
    if (th->slow) {
        thread_slow(th);
    }
    th->check = th->tstate_watch == NULL || th->slow;
}

/* The calling thread's record. Its slow path may run Python (the name
 * lookup, the watch), which may let another thread swap the table in and
 * free the old one: *t, read before, is then read again (t may be NULL). */
static inline __attribute__((always_inline)) ptk__thread *
thread_here(ptk__table **t)
{
    ptk__thread *th = ptk__thread_get();
    if (th != NULL && th->check) {
        thread_check(th);
        if (t != NULL) {
            *t = ptk__current;
        }
    }
    return th;
}

static inline __attribute__((always_inline)) void
ev_init(ptk_event *ev, ptk__thread *th, int kind, PyCodeObject *code,
        PyObject *arg, int32_t depth)
{
    ptk__event_blank(ev, &th->pub, kind);
    ev->code = code;
    ev->arg = arg;
    ev->depth = depth;
}

/* The lean path (ptk__table::lean): the calling thread's record when
 * kind's only subscriber takes the event with nothing else to do first (no
 * stacks, no code to judge, the thread needs no check, no dispatch is
 * slow); else NULL, and the callback takes its full path. Each callback
 * tests it first and keeps the rest out of line, so that this path saves
 * no more registers than it uses. */
static inline __attribute__((always_inline)) ptk__thread *
lean_thread(const ptk__table *t, int kind)
{
    ptk__thread *th = ptk__tls;
    if (t->lean[kind] == NULL || th == NULL || th->check ||
        ptk__dispatch_slow || local_want) {
        return NULL;
    }
    return th;
}

/* Sets the per-code events on code and records their generation; 0 or -1
 * (it was not possible: the events go global from here on, correct and
 * slower). The traced program's exception, if any, is kept. */
static int
local_apply(PyCodeObject *code, unsigned long events, uint32_t gen)
{
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyObject *r = PyObject_CallFunction(mon_set_local, "iOk", tool,
                                        (PyObject *)code, events);
    int rc = r != NULL ? 0 : -1;
    Py_XDECREF(r);
    PyErr_Clear();
    if (rc == 0 && ptk__code_set_backend_word(code, gen) < 0) {
        rc = -1; /* set but not recorded: it could not be cleared */
    }
    if (rc < 0 && local_want) {
        unsigned long all = prev_events | local_want;
        local_want = 0;
        local_broken = 1;
        if (mon_call_method("set_events", "(ik)", tool, all) == 0) {
            prev_events = all;
        }
        PyErr_Clear();
    }
    PyErr_Restore(et, ev, tb);
    return rc;
}

static void
local_set(PyCodeObject *code)
{
    (void)local_apply(code, local_want, local_gen);
}

/* Is the line whose first instruction is the RESUME at offset (bytes)
 * still delivered to some LINE subscriber, or may it be again? (See
 * line_needs_start.) Under a per-context subscriber a line switched off
 * comes back at the next context change (mon_rearm), which cannot switch
 * a PY_START / PY_RESUME back on for this code alone: they stay on. Not
 * when the RESUME's line has no instruction of its own (a `def` line):
 * there is no LINE to lose, and the PY_START is switched off at once
 * (before, every call of such a function came here while any line of it
 * was on: 190,000 PY_STARTs in test_enum under line coverage). */
static int
resume_line_on(PyCodeObject *code, PyObject *offset)
{
    if (ptk__context_slots == 0 && (ptk__disable_records & (int)PTK_MASK(PTK_EV_LINE)) &&
        ptk__code_line_state(code, 0) == PTK__LINE_OFF) {
        return 0; /* every line of the code object is off */
    }
    int at = (int)small_int(offset);
    int line = PyCode_Addr2Line(code, at);
    if (line < 0) {
        return 1;
    }
    /* Only a line that starts at the RESUME and goes on after it (a
     * one-line function, a class body, a loop resumed after a yield) can
     * lose its LINE: the RESUME of a function of several lines is on its
     * `def` line, which has no instruction of its own after it. */
    if (ptk__code_resume_line_goes_on(code, at, line) == 0) {
        return 0;
    }
    return ptk__context_slots != 0 || !(ptk__disable_records & (int)PTK_MASK(PTK_EV_LINE)) ||
           ptk__code_line_state(code, line) == PTK__LINE_DELIVER;
}

/* Code no subscriber's filter selects (ptk__code_dead) answers DISABLE at
 * every location that can be disabled, the first time it fires; a later
 * subscriber gets it back through restart_events(). */

/* PY_START, PY_RESUME, PY_THROW (code, offset[, exception]): mon_call
 * when it is not on the lean path. */
static __attribute__((noinline)) PyObject *
mon_call_full(PyObject *self, PyObject *const *args)
{
    ptk__table *t = ptk__current;
    PyCodeObject *code = (PyCodeObject *)args[0];
    int what = ((mon_cb *)self)->what;
    if (local_want) {
        if (ptk__code_dead(t, code)) {
            return what == PTK_ORIGIN_THROW ? none() : disable(1);
        }
        if (ptk__code_backend_word(code) != local_gen) {
            local_set(code);
        }
    }
    if (!t->nsub[PTK_EV_CALL] && !t->track_stack) {
        /* enabled for the per-code events, or for LINE's sake
         * (line_needs_start), which keeps this PY_START / PY_RESUME on
         * until the line starting at its RESUME is switched off */
        return local_want && what != PTK_ORIGIN_THROW &&
                       !(line_needs_start && what != PTK_ORIGIN_THROW &&
                         resume_line_on(code, args[1]))
                   ? disable(1)
                   : none();
    }
    ptk__thread *th = thread_here(&t);
    if (th == NULL) {
        return none();
    }
    if (ptk__code_dead(t, code)) {
        /* PY_THROW is not a local event: it cannot be disabled */
        return what == PTK_ORIGIN_THROW ? none() : disable(1);
    }
    int32_t depth = -1;
    if (t->shadow) {
        if (ptk__stack_push(th, code, NULL) < 0) {
            ptk__hub_out_of_memory("the shadow stack");
            return none();
        }
        depth = th->pub.depth;
    }
    if (t->nsub[PTK_EV_CALL]) {
        ptk_event *ev = &MON_HOT(th)->ev_call; /* kind and arg set once */
        ev->origin = (ptk_event_origin)what;
        ev->code = code;
        ev->depth = depth;
        ptk__deliver(t, th, ev, PTK_EV_CALL);
        t = ptk__current; /* a plugin that failed may have retired t */
        /* The stack needs every start; otherwise a code object every CALL
         * subscriber disabled is switched off at this location. */
        if ((ptk__disable_records & (int)PTK_MASK(PTK_EV_CALL)) &&
            !t->track_stack &&
            !(line_needs_start && t->nsub[PTK_EV_LINE]) &&
            ptk__code_all_disabled(t, ev)) {
            return disable(1);
        }
    }
    return none();
}

/* PY_START, PY_RESUME, PY_THROW: the lean path, else mon_call_full. */
static PyObject *
mon_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kw)
{
    (void)nargsf;
    (void)kw;
    ptk__table *t = ptk__current;
    ptk__thread *th = lean_thread(t, PTK_EV_CALL);
    if (th == NULL) {
        return mon_call_full(self, args);
    }
    ptk_event *ev = &MON_HOT(th)->ev_call;
    ev->origin = (ptk_event_origin)((mon_cb *)self)->what;
    ev->code = (PyCodeObject *)args[0];
    ev->depth = -1;
    ptk__deliver_solo(t, th, ev, t->lean[PTK_EV_CALL], PTK_EV_CALL);
    return none();
}

/* PY_RETURN, PY_YIELD (code, offset, value), PY_UNWIND (code, offset,
 * exception). Only enabled while the stack is kept. mon_return when it is
 * not on the lean path. */
static __attribute__((noinline)) PyObject *
mon_return_full(PyObject *self, PyObject *const *args)
{
    ptk__table *t = ptk__current;
    ptk__thread *th = thread_here(&t);
    if (th == NULL) {
        return none();
    }
    PyCodeObject *code = (PyCodeObject *)args[0];
    int origin = ((mon_cb *)self)->what;
    if (ptk__code_dead(t, code)) {
        /* its start was not pushed either; PY_UNWIND is not a local event
         * and cannot be disabled */
        return origin == PTK_ORIGIN_UNWIND ? none() : disable(1);
    }
    /* Frames nest, so the returning frame is the innermost one of its code
     * that the stack knows; a frame that started before tracing is not on
     * it (depth -1, nothing popped). No stack (!shadow): depth -1. */
    int32_t pos = -1;
    if (t->shadow) {
        for (int32_t i = th->pub.depth - 1; i >= 0; i--) {
            if (th->stack[i].code == code) {
                pos = i;
                break;
            }
        }
    }
    if (t->nsub[PTK_EV_RETURN]) {
        ptk_event *ev = &MON_HOT(th)->ev_return; /* kind set once */
        ev->origin = (ptk_event_origin)origin;
        ev->code = code;
        ev->arg = origin == PTK_ORIGIN_UNWIND ? NULL : args[2];
        ev->depth = pos >= 0 ? pos + 1 : -1;
        ptk__deliver(t, th, ev, PTK_EV_RETURN);
    }
    if (pos >= 0) {
        th->pub.depth = pos;
        ptk__cstack_pop_stale(th, pos + 1);
    }
    return none();
}

/* PY_RETURN, PY_YIELD, PY_UNWIND: the lean path, else mon_return_full. */
static PyObject *
mon_return(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kw)
{
    (void)nargsf;
    (void)kw;
    ptk__table *t = ptk__current;
    ptk__thread *th = lean_thread(t, PTK_EV_RETURN);
    if (th == NULL) {
        return mon_return_full(self, args);
    }
    int origin = ((mon_cb *)self)->what;
    ptk_event *ev = &MON_HOT(th)->ev_return;
    ev->origin = (ptk_event_origin)origin;
    ev->code = (PyCodeObject *)args[0];
    ev->arg = origin == PTK_ORIGIN_UNWIND ? NULL : args[2];
    ev->depth = -1;
    ptk__deliver_solo(t, th, ev, t->lean[PTK_EV_RETURN], PTK_EV_RETURN);
    return none();
}

/* What a CALL / C_RETURN / C_RAISE (code, offset, callable, arg0) calls. */
enum {
    C_NONE = 0,  /* a Python function, the common case, or a callable the
                    legacy layer does not report */
    C_FUNC = 1,  /* a built-in function or method */
    C_DESCR = 2, /* a method descriptor with its self */
};

/* PyCFunction_Check by the type, with the common callables that are not
 * one answered without PyType_IsSubtype: a quarter of the CALL and
 * C_RETURN events are of a class or a bound method. No class (a subclass
 * of type) can also derive from builtin_function_or_method: their layouts
 * conflict. */
static inline int
c_is_cfunction(PyTypeObject *tp)
{
    if (tp == &PyCFunction_Type || tp == &PyCMethod_Type) {
        return 1;
    }
    if (tp == &PyMethod_Type || (tp->tp_flags & Py_TPFLAGS_TYPE_SUBCLASS)) {
        return 0;
    }
    return PyType_IsSubtype(tp, &PyCFunction_Type);
}

/* The C_* kind of callable args[2]; for C_FUNC and C_DESCR, its identity
 * (fn, self) as ptk__c_identity names it (for a descriptor, that of the
 * bound method it makes: d_method, arg0). */
static inline int
c_target(PyObject *const *args, const void **fn, const void **cself)
{
    PyObject *callable = args[2];
    if (Py_IS_TYPE(callable, &PyFunction_Type)) {
        return C_NONE;
    }
    if (Py_IS_TYPE(callable, &PyMethodDescr_Type)) {
        /* (checked first: the common case, and PyCFunction_Check is a
         * subtype walk for anything that is not a PyCFunction) */
        if (args[3] == mon_MISSING) {
            return C_NONE;
        }
        *fn = ((PyMethodDescrObject *)callable)->d_method;
        *cself = args[3];
        return C_DESCR;
    }
    if (c_is_cfunction(Py_TYPE(callable))) {
        *fn = ((PyCFunctionObject *)callable)->m_ml;
        *cself = ((PyCFunctionObject *)callable)->m_self;
        return C_FUNC;
    }
    return C_NONE;
}

/* c_target's C_NONE for the commonest callables that are no C function
 * (a Python function, a bound method, a class), read from the type alone:
 * the callbacks turn these away before anything else. */
static inline int
c_none_quick(PyObject *callable)
{
    PyTypeObject *tp = Py_TYPE(callable);
    return tp == &PyFunction_Type || tp == &PyMethod_Type ||
           (tp->tp_flags & Py_TPFLAGS_TYPE_SUBCLASS);
}

/* A method descriptor bound to its self, as the legacy layer reports it
 * (a new reference), or NULL (the error cleared). */
static PyObject *
c_bound(PyObject *const *args)
{
    PyObject *descr = args[2], *self_arg = args[3];
    PyObject *made = Py_TYPE(descr)->tp_descr_get(descr, self_arg,
                                                  (PyObject *)Py_TYPE(self_arg));
    if (made == NULL) {
        PyErr_Clear();
    }
    return made;
}

/* Delivers a C event of args[2], a @p target (C_FUNC or C_DESCR): as
 * @p made (borrowed: the bound method made at the CALL), else a descriptor
 * bound now when some subscriber is not PTK_FLAG_UNBOUND_C, or the
 * descriptor with its self. */
static inline __attribute__((always_inline)) void
c_deliver(ptk__table *t, ptk__thread *th, int kind, PyObject *const *args,
          int target, PyObject *made)
{
    PyObject *arg = made != NULL ? made : args[2];
    PyObject *c_self = NULL, *own = NULL;
    if (made == NULL && target == C_DESCR) {
        if (t->c_bind) {
            own = arg = c_bound(args);
            if (own == NULL) {
                return;
            }
        }
        else {
            c_self = args[3];
        }
    }
    ptk__event_at *at = &MON_HOT(th)->ev_c; /* lasti_ set once */
    at->ev.kind = (ptk_event_kind)kind;
    at->ev.code = (PyCodeObject *)args[0];
    at->ev.arg = arg;
    at->ev.depth = t->shadow ? th->pub.depth : -1;
    at->ev.c_self = c_self;
    at->offset = args[1];
    ptk__deliver(t, th, &at->ev, kind);
    Py_XDECREF(own);
}

/* c_deliver on the lean path (ptk__table::lean, with th from lean_thread):
 * no stacks, no bound method; nothing for a callable that is no C
 * function. */
static inline __attribute__((always_inline)) void
c_deliver_lean(ptk__table *t, ptk__thread *th, int kind, PyObject *const *args)
{
    const void *fn, *cself;
    int target = c_target(args, &fn, &cself);
    if (target == C_NONE) {
        return;
    }
    ptk__event_at *at = &MON_HOT(th)->ev_c; /* lasti_ set once */
    at->ev.kind = (ptk_event_kind)kind;
    at->ev.code = (PyCodeObject *)args[0];
    at->ev.arg = args[2];
    at->ev.depth = -1;
    at->ev.c_self = target == C_DESCR ? args[3] : NULL;
    at->offset = args[1];
    ptk__deliver_solo(t, th, &at->ev, t->lean[kind], kind);
}

/* mon_c_call_full when it is not on the lean path. */
static __attribute__((noinline)) PyObject *
mon_c_call_slow(ptk__table *t, PyObject *const *args)
{
    if (ptk__code_dead(t, (PyCodeObject *)args[0])) {
        return disable(1); /* judged by the calling code */
    }
    const void *fn, *cself;
    int target = c_target(args, &fn, &cself);
    if (target == C_NONE) {
        return none();
    }
    ptk__thread *th = thread_here(&t);
    if (th == NULL) {
        return none();
    }
    if (!t->shadow) { /* (then !c_bind) the subscribers pair C calls */
        if (t->nsub[PTK_EV_C_CALL]) {
            c_deliver(t, th, PTK_EV_C_CALL, args, target, NULL);
        }
        return none();
    }
    if (ptk__cstack_push(th, fn, cself) < 0) {
        ptk__hub_out_of_memory("the stack of C calls");
        return none();
    }
    PyObject *made = NULL;
    if (target == C_DESCR && t->c_bind) {
        /* made once, kept for the C_RETURN / C_RAISE */
        made = c_bound(args);
        if (made == NULL) {
            th->cdepth--;
            return none();
        }
        th->cstack[th->cdepth - 1].made = made;
    }
    if (t->nsub[PTK_EV_C_CALL]) {
        c_deliver(t, th, PTK_EV_C_CALL, args, target, made);
    }
    return none();
}

/* mon_c_call in full: out of line, so that the calls of Python functions,
 * which mon_c_call turns away, save no registers. */
static __attribute__((noinline)) PyObject *
mon_c_call_full(ptk__table *t, PyObject *const *args)
{
    ptk__thread *th = lean_thread(t, PTK_EV_C_CALL);
    if (th == NULL) {
        return mon_c_call_slow(t, args);
    }
    c_deliver_lean(t, th, PTK_EV_C_CALL, args);
    return none();
}

/* CALL (code, offset, callable, arg0). A call of a Python function is
 * nothing to us (its PY_START is the event), nor one of a bound method or
 * a class, unless its caller's code is to be judged dead: those return at
 * once, the rest is mon_c_call_full. */
static PyObject *
mon_c_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kw)
{
    (void)self;
    (void)nargsf;
    (void)kw;
    ptk__table *t = ptk__current;
    if (c_none_quick(args[2]) && !t->dead_possible) {
        return none();
    }
    return mon_c_call_full(t, args);
}

/* C_RETURN, C_RAISE (code, offset, callable, arg0): mon_c_end when it is
 * not on the lean path. */
static __attribute__((noinline)) PyObject *
mon_c_end_full(PyObject *self, PyObject *const *args)
{
    ptk__table *t = ptk__current;
    if (ptk__code_dead(t, (PyCodeObject *)args[0])) {
        return none(); /* C_RETURN and C_RAISE follow CALL: it is disabled */
    }
    const void *fn, *cself;
    int target = c_target(args, &fn, &cself);
    if (target == C_NONE) {
        return none();
    }
    ptk__thread *th = thread_here(&t);
    if (th != NULL && !t->shadow) {
        /* every end, paired by the subscribers (PTK_FLAG_OWN_STACK) */
        int kind = ((mon_cb *)self)->what;
        if (t->nsub[kind]) {
            c_deliver(t, th, kind, args, target, NULL);
        }
        return none();
    }
    int i = th ? ptk__cstack_find(th, fn, cself) : -1;
    if (i >= 0) { /* else: no matching C_CALL, dropped */
        int kind = ((mon_cb *)self)->what;
        PyObject *made = th->cstack[i].made;
        th->cstack[i].made = NULL; /* ours now: released after the event */
        if (i == th->cdepth - 1) {
            th->cdepth = i; /* the innermost call: nothing else to drop */
        }
        else {
            ptk__cstack_truncate(th, i);
        }
        if (t->nsub[kind]) {
            c_deliver(t, th, kind, args, target, made);
        }
        Py_XDECREF(made);
    }
    return none();
}

/* C_RETURN, C_RAISE: the lean path, else mon_c_end_full. Nothing for a
 * callable that is no C function (c_target's C_NONE), whatever the path. */
static PyObject *
mon_c_end(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kw)
{
    (void)nargsf;
    (void)kw;
    if (c_none_quick(args[2])) {
        return none();
    }
    ptk__table *t = ptk__current;
    int kind = ((mon_cb *)self)->what;
    ptk__thread *th = lean_thread(t, kind);
    if (th == NULL) {
        return mon_c_end_full(self, args);
    }
    c_deliver_lean(t, th, kind, args);
    return none();
}

static inline PyObject *
line_at(ptk__table *t, ptk__thread *th, PyCodeObject *code, int line)
{
    if (ptk__code_dead(t, code)) {
        return disable(1);
    }
    if ((ptk__disable_records & (int)PTK_MASK(PTK_EV_LINE)) &&
        ptk__code_line_state(code, line) != PTK__LINE_DELIVER) {
        return disable(1); /* every LINE subscriber disabled this line */
    }
    if (t->nsub[PTK_EV_LINE]) {
        ptk_event ev;
        ev_init(&ev, th, PTK_EV_LINE, code, Py_None,
                t->shadow ? th->pub.depth : -1);
        ev.line = line;
        ptk__deliver(t, th, &ev, ev.kind);
        if ((ptk__disable_records & (int)PTK_MASK(PTK_EV_LINE)) &&
            ptk__code_line_state(code, line) != PTK__LINE_DELIVER) {
            return disable(1);
        }
    }
    return none();
}

/* LINE (code, line). */
static PyObject *
mon_line(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kw)
{
    (void)self;
    (void)nargsf;
    (void)kw;
    ptk__thread *th = thread_here(NULL);
    if (th == NULL) {
        return none();
    }
    return line_at(ptk__current, th, (PyCodeObject *)args[0],
                   (int)small_int(args[1]));
}

/* JUMP (code, from, to): a JUMP event for its subscribers; and, for LINE,
 * the line the legacy layer reports for a jump backwards to the line it
 * jumps from (a loop on one line), which LINE alone does not. A location
 * is switched off once neither needs it. */
static PyObject *
mon_jump(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kw)
{
    (void)self;
    (void)nargsf;
    (void)kw;
    ptk__table *t = ptk__current;
    PyCodeObject *code = (PyCodeObject *)args[0];
    if (ptk__code_dead(t, code)) {
        return disable(1);
    }
    long from = small_int(args[1]), to = small_int(args[2]);
    ptk__thread *th = NULL;
    int jump_off = 1;
    if (t->nsub[PTK_EV_JUMP]) {
        if ((th = thread_here(&t)) == NULL) {
            return none();
        }
        ptk_event ev;
        ev_init(&ev, th, PTK_EV_JUMP, code, Py_None,
                t->shadow ? th->pub.depth : -1);
        ev.lasti_ = (int32_t)from;
        ev.target = (int32_t)to;
        ptk__deliver(t, th, &ev, ev.kind);
        t = ptk__current; /* a plugin that failed may have retired t */
        jump_off = (ptk__disable_records & (int)PTK_MASK(PTK_EV_JUMP)) &&
                   ptk__code_all_disabled(t, &ev);
    }
    int to_line = -1;
    if ((t->mask & PTK_MASK(PTK_EV_LINE)) && to <= from) {
        to_line = PyCode_Addr2Line(code, (int)to);
        if (to_line >= 0 && to_line != PyCode_Addr2Line(code, (int)from)) {
            to_line = -1; /* the LINE event at the target reports it */
        }
    }
    if (to_line < 0) {
        return jump_off ? disable(1) : none();
    }
    if (th == NULL && (th = thread_here(&t)) == NULL) {
        return none();
    }
    PyObject *r = line_at(t, th, code, to_line);
    if (r != none() && !jump_off) {
        Py_DECREF(r); /* LINE is done here, JUMP is not */
        return none();
    }
    return r;
}

/* BRANCH (code, from, to). */
static PyObject *
mon_branch(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kw)
{
    (void)self;
    (void)nargsf;
    (void)kw;
    ptk__table *t = ptk__current;
    PyCodeObject *code = (PyCodeObject *)args[0];
    if (ptk__code_dead(t, code)) {
        return disable(1);
    }
    ptk__thread *th = thread_here(&t);
    if (th == NULL || !t->nsub[PTK_EV_BRANCH]) {
        return none();
    }
    ptk_event ev;
    ev_init(&ev, th, PTK_EV_BRANCH, code, Py_None,
            t->shadow ? th->pub.depth : -1);
    ev.lasti_ = (int32_t)small_int(args[1]);
    ev.target = (int32_t)small_int(args[2]);
    uint64_t marks = ptk__disable_marks;
    ptk__deliver(t, th, &ev, ev.kind);
    t = ptk__current; /* a plugin that failed may have retired t */
    /* (most BRANCH events come from a location one way of which has not
     * been taken yet: nobody disabled anything, nothing to look up) */
    if ((ptk__disable_records & (int)PTK_MASK(PTK_EV_BRANCH)) &&
        marks != ptk__disable_marks && ptk__code_all_disabled(t, &ev)) {
        return disable(1);
    }
    return none();
}

/* BRANCH_LEFT, BRANCH_RIGHT (code, from, to), 3.14+: an event of the
 * direction's kind for its subscribers, and a BRANCH event for those of
 * branch. On these versions CPython's BRANCH is never enabled: with it on, a
 * tool's direction callbacks are not called, and its DISABLE switches off
 * the direction taken only, after which a for loop's exit is not reported
 * (docs/events.md, "Branch events and DISABLE"). A direction is switched
 * off once every subscriber of both kinds has disabled it there (for a
 * branch subscriber that is the location: both directions, as on 3.12 and
 * 3.13). */
static PyObject *
mon_branch_dir(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kw)
{
    (void)nargsf;
    (void)kw;
    ptk__table *t = ptk__current;
    PyCodeObject *code = (PyCodeObject *)args[0];
    if (ptk__code_dead(t, code)) {
        return disable(1);
    }
    ptk__thread *th = thread_here(&t);
    if (th == NULL) {
        return none();
    }
    const ptk_event_kind kinds[2] = {(ptk_event_kind)((mon_cb *)self)->what,
                                     PTK_EV_BRANCH};
    int32_t from = (int32_t)small_int(args[1]), to = (int32_t)small_int(args[2]);
    int off = 1;
    for (int i = 0; i < 2; i++) {
        ptk_event_kind k = kinds[i];
        if (!t->nsub[k]) {
            continue;
        }
        ptk_event ev;
        ev_init(&ev, th, k, code, Py_None, t->shadow ? th->pub.depth : -1);
        ev.lasti_ = from;
        ev.target = to;
        ptk__deliver(t, th, &ev, ev.kind);
        t = ptk__current; /* a plugin that failed may have retired t */
        if (!((ptk__disable_records & (int)PTK_MASK(k)) &&
              ptk__code_all_disabled(t, &ev))) {
            off = 0;
        }
    }
    return off ? disable(1) : none();
}

/* RAISE, STOP_ITERATION (code, offset, exception). */
static PyObject *
mon_raise(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kw)
{
    (void)self;
    (void)nargsf;
    (void)kw;
    ptk__table *t = ptk__current;
    ptk__thread *th = thread_here(&t);
    if (th == NULL || !t->nsub[PTK_EV_EXCEPTION]) {
        return none();
    }
    PyObject *exc = args[2];
    PyObject *tb = PyExceptionInstance_Check(exc) ? PyException_GetTraceback(exc)
                                                  : NULL;
    PyObject *tuple = PyTuple_Pack(3, (PyObject *)Py_TYPE(exc), exc,
                                   tb ? tb : Py_None);
    Py_XDECREF(tb);
    if (tuple == NULL) {
        PyErr_Clear();
        return none();
    }
    ptk_event ev;
    ev_init(&ev, th, PTK_EV_EXCEPTION, (PyCodeObject *)args[0], tuple,
            t->shadow ? th->pub.depth : -1);
    ptk__deliver(t, th, &ev, ev.kind);
    Py_DECREF(tuple);
    return none();
}

/* INSTRUCTION (code, offset). */
static PyObject *
mon_instruction(PyObject *self, PyObject *const *args, size_t nargsf,
                PyObject *kw)
{
    (void)self;
    (void)nargsf;
    (void)kw;
    ptk__table *t = ptk__current;
    if (ptk__code_dead(t, (PyCodeObject *)args[0])) {
        return disable(1);
    }
    ptk__thread *th = thread_here(&t);
    if (th == NULL || !t->nsub[PTK_EV_OPCODE]) {
        return none();
    }
    ptk_event ev;
    ev_init(&ev, th, PTK_EV_OPCODE, (PyCodeObject *)args[0], Py_None,
            t->shadow ? th->pub.depth : -1);
    ev.lasti_ = (int32_t)small_int(args[1]);
    ptk__deliver(t, th, &ev, ev.kind);
    t = ptk__current; /* a plugin that failed may have retired t */
    if ((ptk__disable_records & (int)PTK_MASK(PTK_EV_OPCODE)) &&
        ptk__code_all_disabled(t, &ev)) {
        return disable(1);
    }
    return none();
}

/* ---- the tool id and its callbacks ------------------------------------ */

enum {
    M_PY_START, M_PY_RESUME, M_PY_THROW, M_PY_RETURN, M_PY_YIELD, M_PY_UNWIND,
    M_CALL, M_C_RETURN, M_C_RAISE, M_LINE, M_JUMP, M_RAISE, M_STOP_ITERATION,
    M_INSTRUCTION, M_BRANCH, M_BRANCH_LEFT, M_BRANCH_RIGHT, M_COUNT
};

static const struct {
    const char *name; /* in sys.monitoring.events */
    vectorcallfunc fn;
    int what;
    int optional; /* not every version has it (then its ev_bit stays 0) */
} regs[M_COUNT] = {
    [M_PY_START] = {"PY_START", mon_call, PTK_ORIGIN_START, 0},
    [M_PY_RESUME] = {"PY_RESUME", mon_call, PTK_ORIGIN_RESUME, 0},
    [M_PY_THROW] = {"PY_THROW", mon_call, PTK_ORIGIN_THROW, 0},
    [M_PY_RETURN] = {"PY_RETURN", mon_return, PTK_ORIGIN_RETURN, 0},
    [M_PY_YIELD] = {"PY_YIELD", mon_return, PTK_ORIGIN_YIELD, 0},
    [M_PY_UNWIND] = {"PY_UNWIND", mon_return, PTK_ORIGIN_UNWIND, 0},
    [M_CALL] = {"CALL", mon_c_call, PTK_EV_C_CALL, 0},
    [M_C_RETURN] = {"C_RETURN", mon_c_end, PTK_EV_C_RETURN, 0},
    [M_C_RAISE] = {"C_RAISE", mon_c_end, PTK_EV_C_EXCEPTION, 0},
    [M_LINE] = {"LINE", mon_line, 0, 0},
    [M_JUMP] = {"JUMP", mon_jump, 0, 0},
    [M_RAISE] = {"RAISE", mon_raise, 0, 0},
    [M_STOP_ITERATION] = {"STOP_ITERATION", mon_raise, 0, 0},
    [M_INSTRUCTION] = {"INSTRUCTION", mon_instruction, 0, 0},
    [M_BRANCH] = {"BRANCH", mon_branch, 0, 0},
    [M_BRANCH_LEFT] = {"BRANCH_LEFT", mon_branch_dir, PTK_EV_BRANCH_LEFT, 1},
    [M_BRANCH_RIGHT] = {"BRANCH_RIGHT", mon_branch_dir, PTK_EV_BRANCH_RIGHT, 1},
};

static unsigned long ev_bit[M_COUNT]; /* sys.monitoring.events.NAME */
static PyObject *callbacks[M_COUNT];

/* Why the backend cannot run where sys.monitoring is missing. */
static int
mon_absent(char **errmsg)
{
    if (Py_Version < 0x030C0000) {
        return ptk__err(errmsg, PTK_EUNSUPPORTED,
                        "the monitoring backend needs CPython 3.12 or newer "
                        "(sys.monitoring); this is %s",
                        ptk__python_version());
    }
    return ptk__err(errmsg, PTK_EUNSUPPORTED,
                    "the monitoring backend needs sys.monitoring (PEP 669), "
                    "which this CPython %s does not have",
                    ptk__python_version());
}

/* The callbacks return None without a new reference: None must be
 * immortal (PEP 683, which came with sys.monitoring in 3.12). */
static int
none_is_immortal(void)
{
    Py_ssize_t none_refs = Py_REFCNT(Py_None);
    Py_INCREF(Py_None);
    int immortal = Py_REFCNT(Py_None) == none_refs;
    Py_DECREF(Py_None);
    return immortal;
}

/* Reads each event's bit from sys.monitoring.events and makes its callback
 * object; 0 with *lacks the event it lacks (or NULL: out of memory). */
static int
make_callbacks(PyObject *events, const char **lacks)
{
    for (int i = 0; i < M_COUNT; i++) {
        if (regs[i].optional && PyObject_HasAttrString(events, regs[i].name) != 1) {
            ev_bit[i] = 0; /* (3.12, 3.13: no BRANCH_LEFT / BRANCH_RIGHT) */
            continue;
        }
        PyObject *v = PyObject_GetAttrString(events, regs[i].name);
        ev_bit[i] = v ? PyLong_AsUnsignedLong(v) : 0;
        int ok = v != NULL && !PyErr_Occurred();
        Py_XDECREF(v);
        if (!ok) {
            *lacks = regs[i].name;
            return 0;
        }
        if (callbacks[i] == NULL) {
            mon_cb *cb = PyObject_New(mon_cb, &mon_cb_type);
            if (cb == NULL) {
                return 0;
            }
            cb->vectorcall = regs[i].fn;
            cb->what = regs[i].what;
            callbacks[i] = (PyObject *)cb;
        }
    }
    return 1;
}

static int
mon_init(char **errmsg)
{
    if (mon_module != NULL) {
        return PTK_OK;
    }
    if (PyType_Ready(&mon_cb_type) < 0) {
        PyErr_Clear();
        return ptk__err(errmsg, PTK_EPYTHON, "cannot create the callback type");
    }
    PyObject *mod = PySys_GetObject("monitoring"); /* borrowed */
    if (mod == NULL) {
        PyErr_Clear();
        return mon_absent(errmsg);
    }
    int immortal = none_is_immortal();
    static const char *const functions[] = {
        "use_tool_id", "free_tool_id", "get_tool", "register_callback",
        "set_events", "restart_events",
    };
    const char *lacks = NULL;
    for (size_t i = 0; lacks == NULL && i < sizeof functions / sizeof *functions; i++) {
        if (PyObject_HasAttrString(mod, functions[i]) != 1) {
            lacks = functions[i];
        }
    }
    PyObject *events = PyObject_GetAttrString(mod, "events");
    PyObject *dis = PyObject_GetAttrString(mod, "DISABLE");
    PyObject *missing = PyObject_GetAttrString(mod, "MISSING");
    PyObject *set_local = PyObject_GetAttrString(mod, "set_local_events");
    if (lacks == NULL) {
        lacks = !events ? "events" : !dis ? "DISABLE" : !missing ? "MISSING"
              : !set_local ? "set_local_events" : NULL;
    }
    if (!immortal) {
        Py_XDECREF(events);
        Py_XDECREF(dis);
        Py_XDECREF(missing);
        Py_XDECREF(set_local);
        PyErr_Clear();
        return ptk__err(errmsg, PTK_EUNSUPPORTED,
                        "the monitoring backend cannot run on CPython %s: "
                        "None is not immortal there (PEP 683)",
                        ptk__python_version());
    }
    int ok = lacks == NULL && make_callbacks(events, &lacks);
    Py_XDECREF(events);
    if (!ok) {
        Py_XDECREF(dis);
        Py_XDECREF(missing);
        Py_XDECREF(set_local);
        PyErr_Clear();
        if (lacks == NULL) {
            return ptk__err(errmsg, PTK_EPYTHON, "cannot make the sys.monitoring "
                            "callbacks");
        }
        return ptk__err(errmsg, PTK_EUNSUPPORTED,
                        "the monitoring backend cannot run on CPython %s: "
                        "sys.monitoring there has no %s",
                        ptk__python_version(), lacks);
    }
    mon_DISABLE = dis;
    mon_MISSING = missing;
    mon_set_local = set_local;
    mon_module = Py_NewRef(mod);
    return PTK_OK;
}

/* sys.monitoring.NAME(args...); 0 or -1 (the exception is left set). */
static int
mon_call_method(const char *name, const char *fmt, ...)
{
    PyObject *fn = PyObject_GetAttrString(mon_module, name);
    if (fn == NULL) {
        return -1;
    }
    va_list ap;
    va_start(ap, fmt);
    PyObject *a = Py_VaBuildValue(fmt, ap);
    va_end(ap);
    PyObject *r = a ? PyObject_CallObject(fn, a) : NULL;
    Py_XDECREF(a);
    Py_DECREF(fn);
    Py_XDECREF(r);
    return r ? 0 : -1;
}

static char *
tool_holder(int id)
{
    PyObject *fn = PyObject_GetAttrString(mon_module, "get_tool");
    PyObject *r = fn ? PyObject_CallFunction(fn, "i", id) : NULL;
    Py_XDECREF(fn);
    const char *u = r && PyUnicode_Check(r) ? PyUnicode_AsUTF8(r) : NULL;
    char *s = ptk__asprintf("'%s'", u ? u : "?");
    Py_XDECREF(r);
    PyErr_Clear();
    return s;
}

/* Does LINE alone report the line of a one-line function? (See
 * line_needs_start.) Runs with our tool id, before our callbacks are set. */
static void
probe_line_after_resume(void)
{
    static const char src[] =
        "import sys\n"
        "_m = sys.monitoring\n"
        "_seen = []\n"
        "def _ptk_line(code, line):\n"
        "    if code.co_name == '_ptk_one':\n"
        "        _seen.append(line)\n"
        "_m.register_callback(_tool, _m.events.LINE, _ptk_line)\n"
        "_m.set_events(_tool, _m.events.LINE)\n"
        "def _ptk_one(): return 1\n"
        "_ptk_one()\n"
        "_m.set_events(_tool, 0)\n"
        "_m.register_callback(_tool, _m.events.LINE, None)\n"
        "_lost = not _seen\n";
    PyObject *id = PyLong_FromLong(tool);
    PyObject *g = id ? ptk__run_snippet(src, "_tool", id) : NULL;
    PyObject *lost = g ? PyDict_GetItemString(g, "_lost") : NULL;
    line_needs_start = lost != NULL && PyObject_IsTrue(lost) == 1;
    if (g != NULL) {
        /* its functions and their globals make a cycle: broken here, it is
         * not garbage the program's next collections find (docs/attach.md) */
        PyDict_Clear(g);
    }
    Py_XDECREF(g);
    Py_XDECREF(id);
    PyErr_Clear();
}

/* Claiming and releasing call into Python (sys.monitoring's functions, the
 * probe), where another thread can run: one that starts a session then must
 * neither take a half-claimed tool id for a held one nor find it freed under
 * its running session. While one thread claims or releases (mon_busy), the
 * others' claims wait for it with the GIL let go, and their releases leave
 * it alone (the one busy decides); the same thread, re-entered from the
 * Python code it runs, is refused instead of waiting for itself. */
enum { MON_IDLE, MON_CLAIMING, MON_RELEASING };
static int mon_busy;
static unsigned long mon_busy_thread;
static pid_t mon_busy_pid; /* a forked child's busy thread is not there */

/* mon_busy, as it is in this process: forked while another thread claimed
 * or released, that thread is not here (what it left half done was copied
 * as it was, as in any fork of a thread busy in Python). */
static int
mon_busy_now(void)
{
    if (mon_busy != MON_IDLE && mon_busy_pid != getpid()) {
        mon_busy = MON_IDLE;
    }
    return mon_busy;
}

/* Waits (the GIL let go) until no other thread claims or releases; -1 if
 * the calling thread itself is busy claiming or releasing. */
static int
mon_wait_idle(void)
{
    unsigned long me = PyThread_get_thread_ident();
    while (mon_busy_now() != MON_IDLE) {
        if (mon_busy_thread == me) {
            return -1;
        }
        Py_BEGIN_ALLOW_THREADS
        struct timespec nap = {0, 100000}; /* 0.1 ms */
        nanosleep(&nap, NULL);
        Py_END_ALLOW_THREADS
    }
    return 0;
}

static void
mon_set_busy(int what)
{
    mon_busy = what;
    mon_busy_thread = what != MON_IDLE ? PyThread_get_thread_ident() : 0;
    mon_busy_pid = getpid();
}

static void ptk__mon_release(void);

static int
ptk__mon_claim(char **errmsg)
{
    if (mon_wait_idle() < 0) {
        return ptk__err(errmsg, PTK_EBUSY,
                        "a session was started from Python code that "
                        "pytracekit ran while %s the sys.monitoring tool id",
                        mon_busy == MON_CLAIMING ? "claiming" : "releasing");
    }
    if (tool >= 0) {
        return PTK_OK;
    }
    int rc = mon_init(errmsg);
    if (rc < 0) {
        return rc;
    }
    mon_set_busy(MON_CLAIMING);
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    /* 0, 1, 2 and 5 are what CPython names for debuggers, coverage,
     * profilers and optimisers: leave them to those tools. */
    static const int ids[] = {3, 4};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0] && tool < 0; i++) {
        if (mon_call_method("use_tool_id", "(is)", ids[i], "pytracekit") == 0) {
            tool = ids[i];
        }
        PyErr_Clear();
    }
    if (tool < 0) {
        char *a = tool_holder(3), *b = tool_holder(4);
        rc = ptk__err(errmsg, PTK_EBUSY,
                      "sys.monitoring tool ids 3 and 4 are both in use "
                      "(by %s and %s)", a ? a : "?", b ? b : "?");
        free(a);
        free(b);
        mon_set_busy(MON_IDLE);
        PyErr_Restore(et, ev, tb);
        return rc;
    }
    probe_line_after_resume();
    for (int i = 0; i < M_COUNT; i++) {
        if (ev_bit[i] == 0) {
            continue; /* an optional event this version does not have */
        }
        if (mon_call_method("register_callback", "(ikO)", tool, ev_bit[i],
                            callbacks[i]) < 0) {
            char *why = ptk__format_exception();
            rc = ptk__err(errmsg, PTK_EPYTHON,
                          "sys.monitoring.register_callback(%d, %s) failed: %s",
                          tool, regs[i].name, why ? why : "?");
            free(why);
            mon_set_busy(MON_IDLE);
            ptk__mon_release();
            break;
        }
    }
    prev_events = 0;
    prev_track = 0;
    prev_shadow = 0;
    mon_set_busy(MON_IDLE);
    PyErr_Restore(et, ev, tb);
    return rc;
}

static void
ptk__mon_release(void)
{
    if (tool < 0 || mon_busy_now() != MON_IDLE) {
        return; /* not held, or another claim or release decides */
    }
    for (struct ptk_session *s = ptk__active_sessions; s; s = s->next_active) {
        if (s->running) {
            /* one started while the hub's stop ran Python code (a
             * finalizer) on its way here: the tool id is its now */
            return;
        }
    }
    mon_set_busy(MON_RELEASING);
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    mon_call_method("set_events", "(ik)", tool, 0ul);
    PyErr_Clear();
    local_want = 0;
    ptk__code_each_backend_word(local_update, NULL);
    local_walked = 0;
    for (int i = 0; i < M_COUNT; i++) {
        if (ev_bit[i] == 0) {
            continue;
        }
        mon_call_method("register_callback", "(ikO)", tool, ev_bit[i], Py_None);
        PyErr_Clear();
    }
    mon_call_method("free_tool_id", "(i)", tool);
    PyErr_Clear();
    tool = -1;
    prev_events = 0;
    mon_set_busy(MON_IDLE);
    PyErr_Restore(et, ev, tb);
}

static unsigned long
bits(int from, int to)
{
    unsigned long m = 0;
    for (int i = from; i <= to; i++) {
        m |= ev_bit[i];
    }
    return m;
}

/* ptk__code_each_backend_word: brings code to the per-code events of now. */
static void
local_update(PyCodeObject *code, void *arg)
{
    (void)arg;
    (void)local_apply(code, local_want, local_want ? local_gen : 0);
}

/* Sets the per-code events on the code of every frame running now (in
 * every thread) that t's filters select: those frames had their PY_START
 * before. The frames are listed first, then judged (which may call Python). */
static void
local_walk(const ptk__table *t)
{
    PyObject *seen = PyList_New(0);
    PyThreadState *ts = PyInterpreterState_ThreadHead(PyInterpreterState_Get());
    for (; seen != NULL && ts != NULL; ts = PyThreadState_Next(ts)) {
        PyFrameObject *f = PyThreadState_GetFrame(ts);
        while (f != NULL) {
            PyObject *code = (PyObject *)PyFrame_GetCode(f);
            PyObject *g = PyFrame_GetGlobals(f);
            PyObject *pair = code && g ? PyTuple_Pack(2, code, g) : NULL;
            if (pair == NULL || PyList_Append(seen, pair) < 0) {
                PyErr_Clear();
            }
            Py_XDECREF(pair);
            Py_XDECREF(g);
            Py_XDECREF(code);
            PyFrameObject *back = PyFrame_GetBack(f);
            Py_DECREF(f);
            f = back;
        }
    }
    for (Py_ssize_t i = 0; seen != NULL && i < PyList_GET_SIZE(seen); i++) {
        PyObject *pair = PyList_GET_ITEM(seen, i);
        PyCodeObject *code = (PyCodeObject *)PyTuple_GET_ITEM(pair, 0);
        int kept;
        if (local_want && ptk__code_backend_word(code) != local_gen &&
            (ptk__code_rejects_in(t, code, PyTuple_GET_ITEM(pair, 1), &kept) &
             t->slots) != t->slots) {
            local_set(code);
        }
    }
    Py_XDECREF(seen);
    PyErr_Clear();
}

/* Locations switched off for subscribers that have left stay off for the
 * ones that come: a new subscriber (or the stack needing every start again)
 * needs them back on. */
static int
needs_restart(const ptk__table *t)
{
    uint64_t newest = seen_serial;
    for (int k = 0; k < PTK_EV_COUNT; k++) {
        for (int i = 0; i < t->nsub[k]; i++) {
            uint64_t s = t->subs[k][i].ctx->serial;
            newest = s > newest ? s : newest;
        }
    }
    int restart = mon_disabled &&
                  (newest > seen_serial || (t->track_stack && !prev_track));
    seen_serial = newest;
    return restart;
}

/* Empties every thread's shadow stack and stack of C calls (with the
 * bound methods kept for them): the table no longer keeps them, and a
 * later one that does starts from nothing, as at a session's start. */
static void
stacks_drop(void)
{
    for (size_t i = 0; i < ptk__thread_count(); i++) {
        ptk__thread *th = ptk__thread_at(i);
        if (th != NULL) {
            ptk__cstack_truncate(th, 0);
            th->pub.depth = 0;
        }
    }
}

/* ---- the program taking the tool id's events away -------------------- */

/* A program may call sys.monitoring.set_events, register_callback or
 * free_tool_id on the hub's tool id (3.12+ has no way to refuse): its
 * events then stop with no word. Each sync (a session's start or stop, a
 * plugin added or removed) first checks that the id is still the hub's,
 * with the events and callbacks the hub left there; what it finds changed is
 * said in the notes of each session that was running (the report's
 * summary and run.json, as the legacy backend says of a replaced profile
 * function) and put back: the callbacks at once, the events by the sync,
 * the id by claiming one again while sessions run. */
static uint64_t mon_checked_ns; /* the end of the last sync: all was ours */

static void
mon_note_taken(const char *what, int retaken)
{
    uint64_t now = ptk__clock_ns();
    for (struct ptk_session *s = ptk__active_sessions; s; s = s->next_active) {
        if (s->backend != PTK_BACKEND_MONITORING || s->t_start > mon_checked_ns) {
            continue; /* started by this sync: after what happened */
        }
        char when[96];
        if (!s->running) {
            snprintf(when, sizeof when, "at the session's stop");
        }
        else {
            snprintf(when, sizeof when, "%.3f s after the start%s",
                     (double)(now - s->t_start) / 1e9,
                     retaken ? ", and taken back" : "");
        }
        char *line = ptk__asprintf(
            "%spytracekit: the program %s (noticed %s): events after it "
            "%smay be missing from these reports\n",
            s->notes ? s->notes : "", what, when,
            s->running && retaken ? "until then " : "");
        if (line != NULL) {
            free(s->notes);
            s->notes = line;
        }
    }
}

/* Whether the program freed our tool id or took it (the holder's name is
 * not ours): the message, and *lost set; NULL if the id is still ours. */
static char *
mon_id_taken(PyObject *holder, int *lost)
{
    const char *name = holder != Py_None ? PyUnicode_AsUTF8(holder) : "";
    if (holder != Py_None && name != NULL && strcmp(name, "pytracekit") == 0) {
        return NULL;
    }
    *lost = 1;
    if (holder == Py_None) {
        return ptk__asprintf("freed pytracekit's sys.monitoring tool id %d "
                             "(sys.monitoring.free_tool_id)", tool);
    }
    return ptk__asprintf("freed pytracekit's sys.monitoring tool id %d and "
                         "took it as '%s'", tool, name != NULL ? name : "?");
}

/* Whether the program changed our tool id's events (the sync sets them
 * again): the message, or NULL. */
static char *
mon_events_changed(void)
{
    char *what = NULL;
    PyObject *r = PyObject_CallMethod(mon_module, "get_events", "i", tool);
    unsigned long now = r != NULL ? PyLong_AsUnsignedLong(r) : prev_events;
    Py_XDECREF(r);
    /* C_RETURN and C_RAISE go with CALL: get_events leaves them out */
    unsigned long ancillary = ev_bit[M_C_RETURN] | ev_bit[M_C_RAISE];
    if (r != NULL && !PyErr_Occurred() &&
        (now & ~ancillary) != (prev_events & ~ancillary)) {
        what = ptk__asprintf("changed the events of pytracekit's "
                             "sys.monitoring tool id %d "
                             "(sys.monitoring.set_events)", tool);
        prev_events = now;
    }
    PyErr_Clear();
    return what;
}

/* Registers each of our callbacks again (with @p ours NULL: takes them
 * off, leaving another tool's in place). Returns the message for the
 * first one the program had replaced, or NULL. */
static char *
mon_callbacks_again(int ours)
{
    char *what = NULL;
    int dirs = ev_bit[M_BRANCH_LEFT] != 0; /* 3.14+: BRANCH is two directions */
    for (int i = 0; i < M_COUNT; i++) {
        if (ev_bit[i] == 0 || (dirs && i == M_BRANCH)) {
            continue;
        }
        PyObject *now = ours ? callbacks[i] : Py_None;
        PyObject *old = PyObject_CallMethod(mon_module, "register_callback",
                                            "ikO", tool, ev_bit[i], now);
        if (ours && old != NULL && old != callbacks[i] && what == NULL) {
            what = ptk__asprintf("replaced pytracekit's sys.monitoring "
                                 "callback for %s "
                                 "(sys.monitoring.register_callback)",
                                 regs[i].name);
        }
        if (!ours && old != NULL && old != Py_None && old != callbacks[i]) {
            PyObject *back = PyObject_CallMethod(
                mon_module, "register_callback", "ikO", tool, ev_bit[i], old);
            Py_XDECREF(back);
        }
        Py_XDECREF(old);
        PyErr_Clear();
    }
    return what;
}

static void
mon_check_taken(void)
{
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    char *what = NULL;
    int lost = 0;
    PyObject *holder = PyObject_CallMethod(mon_module, "get_tool", "i", tool);
    if (holder != NULL && holder != Py_None && !PyUnicode_Check(holder)) {
        Py_CLEAR(holder); /* not what CPython answers: no judgement */
    }
    if (holder != NULL) {
        what = mon_id_taken(holder, &lost);
    }
    if (holder != NULL && !lost) {
        what = mon_events_changed();
        char *cb = mon_callbacks_again(1);
        if (what == NULL) {
            what = cb;
        }
        else {
            free(cb);
        }
    }
    Py_XDECREF(holder);
    PyErr_Clear();
    if (what != NULL) {
        int running = 0;
        for (struct ptk_session *s = ptk__active_sessions; s; s = s->next_active) {
            running |= s->running;
        }
        int retaken = 1;
        if (lost) {
            /* not ours to switch off or free any more; our callbacks that
             * are still there (3.12, 3.13: free_tool_id keeps them) go */
            free(mon_callbacks_again(0));
            tool = -1;
            prev_events = 0;
            retaken = running && ptk__mon_claim(NULL) == PTK_OK;
        }
        mon_note_taken(what, retaken);
        free(what);
    }
    PyErr_Restore(et, ev, tb);
}

/* The sys.monitoring events the table's kinds need (before per-code
 * events take the code-level ones). */
static unsigned long
events_wanted(const ptk__table *t)
{
    unsigned long want = 0;
    unsigned m = t->mask;
    if ((m & PTK_MASK(PTK_EV_CALL)) || t->track_stack) {
        want |= bits(M_PY_START, M_PY_THROW);
    }
    if (t->track_stack) {
        want |= bits(M_PY_RETURN, M_PY_UNWIND);
    }
    if (m & (PTK_MASK(PTK_EV_C_CALL) | PTK_MASK(PTK_EV_C_RETURN) |
             PTK_MASK(PTK_EV_C_EXCEPTION))) {
        want |= bits(M_CALL, M_C_RAISE);
    }
    if (m & PTK_MASK(PTK_EV_LINE)) {
        want |= bits(M_LINE, M_JUMP);
        if (line_needs_start) {
            want |= ev_bit[M_PY_START] | ev_bit[M_PY_RESUME];
        }
    }
    if (m & PTK_MASK(PTK_EV_JUMP)) {
        want |= ev_bit[M_JUMP];
    }
    /* 3.14+: branch comes from the two directions (see mon_branch_dir) */
    unsigned long dirs = ev_bit[M_BRANCH_LEFT] | ev_bit[M_BRANCH_RIGHT];
    if (m & PTK_MASK(PTK_EV_BRANCH)) {
        want |= dirs ? dirs : ev_bit[M_BRANCH];
    }
    if (m & (PTK_MASK(PTK_EV_BRANCH_LEFT) | PTK_MASK(PTK_EV_BRANCH_RIGHT))) {
        want |= dirs;
    }
    if (m & PTK_MASK(PTK_EV_EXCEPTION)) {
        want |= bits(M_RAISE, M_STOP_ITERATION);
    }
    if (m & PTK_MASK(PTK_EV_OPCODE)) {
        want |= ev_bit[M_INSTRUCTION];
    }
    return want;
}

static int
ptk__mon_sync(const ptk__table *t, int install_here, char **errmsg)
{
    if (tool < 0) {
        return PTK_OK;
    }
    if (mon_busy_now() == MON_IDLE) {
        mon_check_taken();
        if (tool < 0) {
            return PTK_OK;
        }
    }
    unsigned long want = events_wanted(t);
    unsigned long dirs = ev_bit[M_BRANCH_LEFT] | ev_bit[M_BRANCH_RIGHT];
    unsigned long per_code = bits(M_LINE, M_JUMP) | ev_bit[M_BRANCH] |
                             ev_bit[M_INSTRUCTION] | dirs;
    /* per code also under a per-context subscriber (PTK_FLAG_PER_CONTEXT):
     * mon_rearm switches a code object's DISABLEd lines back on for this
     * tool by changing its local events, which re-instruments them only if
     * they are not set for the whole interpreter (a global LINE with an
     * unfiltered profiler beside coverage:contexts=true kept every line to
     * the first context that ran it) */
    unsigned long local = (t->dead_possible || t->per_context) && !local_broken
                              ? want & per_code
                              : 0;
    if (local) {
        want = (want & ~per_code) | ev_bit[M_PY_START] | ev_bit[M_PY_RESUME];
    }
    if (t->track_stack && !t->shadow && prev_shadow) {
        stacks_drop(); /* not kept from here on: no stale frames later */
    }
    if (install_here && t->shadow) {
        ptk__seed_stack(0);
    }
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    int rc = PTK_OK;
    if (local != local_want) {
        local_want = local;
        local_gen = local_gen + 1 ? local_gen + 1 : 1;
        ptk__code_each_backend_word(local_update, NULL);
    }
    if (local_want && local_walked != ptk__table_gen) {
        local_walk(t);
        local_walked = ptk__table_gen;
    }
    if (needs_restart(t)) {
        if (mon_call_method("restart_events", "()") == 0) {
            mon_disabled = 0;
        }
        PyErr_Clear();
    }
    prev_track = t->track_stack;
    prev_shadow = t->shadow;
    if (want != prev_events) {
        if (mon_call_method("set_events", "(ik)", tool, want) < 0) {
            char *why = ptk__format_exception();
            rc = ptk__err(errmsg, PTK_EPYTHON,
                          "sys.monitoring.set_events(%d, %#lx) failed: %s",
                          tool, want, why ? why : "?");
            free(why);
        }
        else {
            prev_events = want;
        }
    }
    mon_checked_ns = ptk__clock_ns();
    PyErr_Restore(et, ev, tb);
    return rc;
}

static void
ptk__mon_reset(void)
{
    /* the tool id and its callbacks went with the interpreter */
    tool = -1;
    mon_module = NULL;
    mon_DISABLE = mon_MISSING = NULL;
    mon_set_local = NULL;
    local_want = 0;
    local_walked = 0;
    local_broken = 0;
    for (int i = 0; i < M_COUNT; i++) {
        callbacks[i] = NULL;
    }
    mon_disabled = 0;
    mon_set_busy(MON_IDLE); /* a thread that was claiming is not here */
    seen_serial = 0;
    prev_track = 0;
    prev_shadow = 0;
    prev_events = 0;
}


/* ---- the backend's table ------------------------------------------------ */

/* Decided by behaviour, not at build time: the backend uses only
 * sys.monitoring's Python API and public C API (cmake/monitoring_probe.py
 * asks the same at configure time). */
static int
mon_available(char **errmsg)
{
    return mon_init(errmsg); /* says what is missing */
}

static unsigned int
mon_events(void)
{
    unsigned int m = ptk__fed_mask(PTK_FEED_MONITORING);
    if (mon_init(NULL) < 0 || ev_bit[M_BRANCH_LEFT] == 0 || ev_bit[M_BRANCH_RIGHT] == 0) {
        /* before 3.14 */
        m &= ~(PTK_MASK(PTK_EV_BRANCH_LEFT) | PTK_MASK(PTK_EV_BRANCH_RIGHT));
    }
    return m;
}

/* The plan: whether the stacks are kept, whether C method descriptors are
 * bound, and the lean paths of the callbacks. */
static void
mon_plan(ptk__table *t)
{
    unsigned c_events = PTK_MASK(PTK_EV_C_CALL) | PTK_MASK(PTK_EV_C_RETURN) |
                        PTK_MASK(PTK_EV_C_EXCEPTION);
    unsigned py_events = PTK_MASK(PTK_EV_CALL) | PTK_MASK(PTK_EV_RETURN);
    int all_own = 1; /* every subscriber is PTK_FLAG_OWN_STACK */
    for (int k = 0; k < PTK_EV_COUNT; k++) {
        for (int i = 0; i < t->nsub[k]; i++) {
            const ptk__sub *s = &t->subs[k][i];
            if (s->on_event == NULL) {
                continue; /* counts depth only: not a subscriber of k */
            }
            if (!(s->flags & PTK_FLAG_OWN_STACK)) {
                all_own = 0;
            }
            if ((PTK_MASK(k) & c_events) && !(s->flags & PTK_FLAG_UNBOUND_C)) {
                t->c_bind = 1;
            }
        }
    }
    t->track_stack = t->need_stack ||
                     (t->mask & (c_events | PTK_MASK(PTK_EV_RETURN))) != 0;
    /* The events stay on (track_stack); only the stacks are not kept when
     * nobody reads depth or needs the hub to pair C events: the timer
     * keeps its own stack of the same frames. */
    t->shadow = t->track_stack && !(all_own && !t->need_stack && !t->c_bind);
    if (t->track_stack && !t->shadow && !t->dead_possible) {
        unsigned lean = py_events | c_events;
        for (int k = 0; k < PTK_EV_COUNT; k++) {
            t->lean[k] = (PTK_MASK(k) & lean) ? t->solo[k] : NULL;
        }
    }
}

/* The context changed: code's locations that this tool switched off with
 * DISABLE fire again, for this tool only. CPython re-instruments a code
 * object for a tool when that tool's local events on it change, and then
 * sets every location of the events it keeps, DISABLEd ones too: so the
 * local events are changed and put back (set to none and back where they
 * are per code; set to the global ones and back to none where the events
 * are global). sys.monitoring.restart_events() would switch back every
 * tool's DISABLEs, not only ours. The program's exception is kept. */
static void
mon_rearm(PyCodeObject *code)
{
    if (tool < 0 || mon_set_local == NULL || mon_module == NULL) {
        return;
    }
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    unsigned long local_ok = 0; /* the events sys.monitoring takes per code */
    static const int local_kinds[] = {M_PY_START, M_PY_RESUME, M_PY_RETURN, M_PY_YIELD,
                                      M_CALL, M_LINE, M_JUMP, M_INSTRUCTION, M_BRANCH,
                                      M_BRANCH_LEFT, M_BRANCH_RIGHT, M_STOP_ITERATION};
    for (size_t i = 0; i < sizeof local_kinds / sizeof local_kinds[0]; i++) {
        local_ok |= ev_bit[local_kinds[i]];
    }
    PyObject *r = PyObject_CallMethod(mon_module, "get_local_events", "iO", tool,
                                      (PyObject *)code);
    unsigned long cur = r != NULL ? PyLong_AsUnsignedLong(r) : 0;
    Py_XDECREF(r);
    if (!PyErr_Occurred()) {
        unsigned long there = cur != 0 ? 0 : (prev_events & local_ok);
        if (cur != 0 || there != 0) {
            PyObject *a = PyObject_CallFunction(mon_set_local, "iOk", tool,
                                                (PyObject *)code, there);
            PyObject *b = a ? PyObject_CallFunction(mon_set_local, "iOk", tool,
                                                    (PyObject *)code, cur)
                            : NULL;
            Py_XDECREF(a);
            Py_XDECREF(b);
        }
    }
    PyErr_Clear();
    PyErr_Restore(et, ev, tb);
}

const ptk__backend_ops ptk__monitoring_ops = {
    .id = PTK_BACKEND_MONITORING,
    .name = "monitoring",
    .available = mon_available,
    .claim = ptk__mon_claim,
    .release = ptk__mon_release,
    .plan = mon_plan,
    .sync = ptk__mon_sync,
    .reset = ptk__mon_reset,
    .thread_hot_init = mon_thread_hot_init,
    .events = mon_events,
    .rearm = mon_rearm,
};
