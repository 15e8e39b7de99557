/* The legacy backend: PyEval_SetProfile / PyEval_SetTrace (and the
 * AllThreads forms). It turns CPython's callbacks into ptk_event records,
 * normalises what differs between versions, keeps the per-thread shadow
 * stack, and hands events to ptk__dispatch. Nothing here decides who gets
 * an event: that is the dispatch table's job. */
#include "backends/backends.h"
#include "core/deliver.h"
#include "backends/frame_hook.h"

#include <stdlib.h>
#include <string.h>

#ifdef Py_T_BOOL /* 3.12+ */
#define PTK_T_BOOL Py_T_BOOL
#define PTK_READONLY Py_READONLY
#else
#include <structmember.h>
#define PTK_T_BOOL T_BOOL
#define PTK_READONLY READONLY
#endif

/* This backend's parts of a thread record, which the hub never reads.
 * The running part (ptk__thread_hot::be): the event of the thread's LINE
 * lane (ptk__table::line_one), made once (legacy_thread_hot_init); code,
 * line, depth and frame are written per event. */
typedef struct legacy_hot {
    ptk_event ev_line;
} legacy_hot;
_Static_assert(sizeof(legacy_hot) <= PTK__THREAD_HOT_PRIVATE,
               "legacy_hot does not fit in ptk__thread_hot::be");
#define LEGACY_HOT(th) PTK__PRIVATE((th)->hot->be, legacy_hot)

/* The lasting part (ptk__thread::be). */
typedef struct legacy_thread {
    /* with ptk__thread::skip_frame: the kind of the event the hub object
     * delivered already */
    int skip_kind;
    /* 3.12.0/1: the generator frame throw() resumed, and where */
    PyFrameObject *thrown_frame;
    int thrown_lasti;
    /* 3.11: the trace function handled this CALL / RETURN of this frame and
     * parked itself; the parked profile function, which CPython calls next
     * with the same event, skips it ("parking") */
    PyFrameObject *park_frame;
    int park_kind;
    /* when sys.settrace [0] / sys.setprofile [1] last ran here */
    uint64_t hook_set_ns[2];
} legacy_thread;
_Static_assert(sizeof(legacy_thread) <= PTK__THREAD_PRIVATE,
               "legacy_thread does not fit in ptk__thread::be");
#define LEGACY_TH(th) PTK__PRIVATE((th)->be, legacy_thread)

/* th->hot is new (its thread ran no Python since it was made or ended) or
 * this backend was just chosen: no frame of before is running. */
static void
legacy_thread_hot_init(ptk__thread *th)
{
    legacy_hot *h = LEGACY_HOT(th);
    memset(h, 0, sizeof *h);
    ptk__event_blank(&h->ev_line, &th->pub, PTK_EV_LINE);
    h->ev_line.arg = Py_None;
    legacy_thread *l = LEGACY_TH(th);
    l->thrown_frame = NULL;
    l->park_frame = NULL;
}

PyObject *ptk__hub_object;

/* Learned once, by a probe, not from version numbers. */
static int unwind_arg_is_none; /* RETURN on unwind passes None (3.12.0/1) */
static int opcode_primed;      /* interpreter-wide opcode flag is set */
static int threading_pending;  /* a threading hook waits for its import */
static void threading_check(PyFrameObject *frame);
static int op_return_value = -1, op_return_const = -1, op_yield_value = -1,
           op_resume = -1;

#define GEN_FLAGS (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR)

static int profile_fn(PyObject *obj, PyFrameObject *frame, int what,
                      PyObject *arg);
static int trace_fn(PyObject *obj, PyFrameObject *frame, int what,
                    PyObject *arg);
/* ---- parking the trace function (before 3.12) ------------------------ *
 *
 * With a trace function set, CPython 3.11 runs every instruction of every
 * frame through its line check (the frame object made, the line looked
 * up), also where f_trace_lines is off. Code that no subscriber's filter
 * selects (ptk__code_dead), and code whose lines every LINE subscriber has
 * disabled while nobody takes EXCEPTION or OPCODE (lines_done), need none
 * of that. While such code runs the trace function is parked: the thread's
 * c_tracefunc is NULL (c_traceobj stays the hub, so sys.gettrace() does
 * not change) and c_profilefunc is parked_profile_fn with no object
 * (sys.getprofile() stays None). That one delivers the CALL and RETURN the
 * trace function would have, and swaps back when code that needs the trace
 * function starts or is returned to. Only one of the two is set at a time,
 * so code that needs the trace function costs what it did, and C calls
 * reach the parked function only from parked code. Parking needs the
 * profile slot free: the table wants no profile function, nobody else's
 * is set.
 *
 * Invariant: while code that needs the trace function runs on a thread
 * whose tracer is the hub, c_tracefunc is trace_fn. Whoever changes the
 * slots, from outside (sys.settrace/setprofile, PyEval_Set*: the audit
 * hook) or the hub itself (set_here, set_all, sync), unparks first. */
#if PTK_HAVE_CFRAME_USE_TRACING
#define PTK_PARK 1
static int parked_profile_fn(PyObject *obj, PyFrameObject *frame, int what,
                             PyObject *arg);
#else
#define PTK_PARK 0 /* 3.12+: PyEval_SetTrace instruments the code itself */
#endif

/* Does the table park the trace function in code it does not select? */
static inline int
park_on(const ptk__table *t)
{
    return PTK_PARK && t->need_trace && t->dead_possible && !t->need_profile;
}

/* Code that needs no trace function either, though selected: every LINE
 * subscriber disabled all its lines (the coverage plugin, once it has seen
 * them), and nobody takes the other trace-only kinds. Its CALL and RETURN
 * are then delivered by the parked profile function. */
__attribute__((unused)) /* 3.11 alone: the parking and the frame hook */
static inline int
lines_done(const ptk__table *t, PyCodeObject *code)
{
    return (ptk__disable_records & (int)PTK_MASK(PTK_EV_LINE)) &&
           !(t->mask & (PTK_MASK(PTK_EV_EXCEPTION) | PTK_MASK(PTK_EV_OPCODE))) &&
           ptk__code_line_state(code, 0) == PTK__LINE_OFF;
}

/* Is the trace function of ts parked? */
static inline int
parked(PyThreadState *ts)
{
#if PTK_PARK
    return ts->c_tracefunc == NULL && ts->c_profilefunc == parked_profile_fn &&
           ts->c_traceobj != NULL && ts->c_traceobj == ptk__hub_object;
#else
    (void)ts;
    return 0;
#endif
}

/* Do the slots of ts hold the hub's trace function alone (the plain state)?
 * No profile function, and nobody replaced the trace function (Python code
 * a callback ran may have). */
__attribute__((unused)) /* 3.11 alone: the parking and the frame hook */
static inline int
trace_alone(PyThreadState *ts)
{
    return ts->c_tracefunc == trace_fn && ts->c_profilefunc == NULL &&
           ts->c_traceobj == ptk__hub_object;
}

#if PTK_PARK
/* Can the trace function of ts be parked now? The table parks, and the
 * slots hold the hub's trace function alone (the parked function takes
 * the profile slot). */
static inline int
may_park(const ptk__table *t, PyThreadState *ts)
{
    return park_on(t) && trace_alone(ts);
}

/* The profile function keeps cframe->use_tracing set; CPython re-reads
 * both slots after each callback and at every instruction. */
static inline void
park(PyThreadState *ts)
{
    ts->c_profilefunc = parked_profile_fn; /* its object stays NULL */
    ts->c_tracefunc = NULL;
}
#endif

/* Suspended: the thread runs code no subscriber selects, entered through
 * the frame hook (frame_hook.h), with both of its functions emptied so
 * that CPython runs it untraced: its own speed, specialised instructions,
 * no per-instruction test. The hub's object stays in the trace slot's
 * object, which marks the state (nobody else puts it there with no
 * function). The frame hook puts the functions back when the frame ends
 * or selected code starts inside it. */
#define PTK_SUSPEND (PTK_PARK && PTK_HAVE_FRAME_HOOK)

__attribute__((unused)) /* 3.11 alone: the parking and the frame hook */
static inline int
suspended(PyThreadState *ts)
{
#if PTK_SUSPEND
    return ts->c_tracefunc == NULL && ts->c_profilefunc == NULL &&
           ts->c_traceobj != NULL && ts->c_traceobj == ptk__hub_object;
#else
    (void)ts;
    return 0;
#endif
}

#if PTK_SUSPEND
/* Sets both functions of ts (their objects unchanged) and the flag
 * CPython's loop tests at each instruction, as PyEval_SetTrace would,
 * without its audit event: the program's audit hooks must not see the
 * hub switch. */
static inline void
slots_set(PyThreadState *ts, Py_tracefunc trace, Py_tracefunc profile)
{
    ts->c_tracefunc = trace;
    ts->c_profilefunc = profile;
    ts->cframe->use_tracing =
        ts->tracing == 0 && (trace != NULL || profile != NULL) ? 255 : 0;
}
#endif

/* Back to the plain state, the trace function set: from parked, or from
 * suspended (the frame that suspended finds the functions changed when it
 * ends, and leaves them). */
static inline void
unpark(PyThreadState *ts)
{
    if (parked(ts)) {
        ts->c_tracefunc = trace_fn;
        ts->c_profilefunc = NULL;
    }
#if PTK_SUSPEND
    else if (suspended(ts)) {
        slots_set(ts, trace_fn, NULL);
    }
#endif
}

/* Unparks every thread of the interpreter (before the hub changes hooks). */
static void
unpark_all(void)
{
    if (!PTK_PARK) {
        return;
    }
    PyInterpreterState *interp = PyThreadState_GetInterpreter(PyThreadState_Get());
    for (PyThreadState *ts = PyInterpreterState_ThreadHead(interp); ts;
         ts = PyThreadState_Next(ts)) {
        unpark(ts);
    }
}

/* ---- reading the current instruction -------------------------------- */

static int
opcode_at(PyFrameObject *frame, PyCodeObject *code, int *oparg, int back)
{
    int lasti = PyFrame_GetLasti(frame) - 2 * back;
    if (lasti < 0) {
        return -1;
    }
    PyObject *bytes = PyCode_GetCode(code); /* de-instrumented, cached */
    if (bytes == NULL) {
        PyErr_Clear();
        return -1;
    }
    int op = -1;
    if (lasti + 1 < PyBytes_GET_SIZE(bytes)) {
        const unsigned char *b = (const unsigned char *)PyBytes_AS_STRING(bytes);
        op = b[lasti];
        if (oparg) {
            *oparg = b[lasti + 1];
        }
    }
    Py_DECREF(bytes);
    return op;
}

static int
opcode_at_lasti(PyFrameObject *frame, PyCodeObject *code, int *oparg)
{
    return opcode_at(frame, code, oparg, 0);
}

/* A generator's RETURN is a yield if the frame stopped at a YIELD_VALUE;
 * 3.13 reports the instruction after it, so look one back as well. */
static int
is_yield(PyFrameObject *frame, PyCodeObject *code)
{
    return opcode_at(frame, code, NULL, 0) == op_yield_value ||
           opcode_at(frame, code, NULL, 1) == op_yield_value;
}

/* ---- turning a CPython callback into events ---------------------------- */

static void want_opcodes(PyFrameObject *frame);

/* Where a frame object keeps f_trace_lines, read from the frame type's own
 * member table (a T_BOOL, a char); -1 where it is not such a member. */
static Py_ssize_t lines_offset = -1;

static void
find_lines_member(void)
{
    for (PyMemberDef *m = PyFrame_Type.tp_members; m != NULL && m->name; m++) {
        if (strcmp(m->name, "f_trace_lines") == 0 && m->type == PTK_T_BOOL &&
            !(m->flags & PTK_READONLY) && m->offset > 0) {
            lines_offset = m->offset;
        }
    }
}

/* frame.f_trace_lines = False: stored as the member's setter stores it
 * (nothing else happens there) without a setattr, once per call of code no
 * subscriber wants; else through setattr, with the name interned once. */
static void
frame_lines_off(PyFrameObject *frame)
{
    if (lines_offset > 0) {
        *((char *)frame + lines_offset) = 0;
        return;
    }
    static PyObject *name;
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    if (name == NULL) {
        name = PyUnicode_InternFromString("f_trace_lines");
    }
    if (name == NULL || PyObject_SetAttr((PyObject *)frame, name, Py_False) < 0) {
        PyErr_Clear();
    }
    PyErr_Restore(et, ev, tb);
}

/* What a new frame needs for the trace function: f_trace_opcodes for
 * OPCODE subscribers, f_trace_lines off where LINE is disabled. */
static inline void
trace_frame_setup(ptk__table *t, PyFrameObject *frame)
{
    if (t->mask & PTK_MASK(PTK_EV_OPCODE)) {
        want_opcodes(frame);
    }
    if (ptk__disable_records & (int)PTK_MASK(PTK_EV_LINE)) {
        PyCodeObject *code = PyFrame_GetCode(frame);
        Py_DECREF(code);
        if (ptk__code_line_state(code, 0) == PTK__LINE_OFF) {
            frame_lines_off(frame);
        }
    }
}

/* OPCODE events need f_trace_opcodes on the frame; on 3.13 the setter only
 * takes effect at once when f_trace is not NULL, so a sentinel (the hub
 * object, which C tracing never calls) is put there first. */
static void
want_opcodes(PyFrameObject *frame)
{
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyObject *cur = PyObject_GetAttrString((PyObject *)frame, "f_trace");
    if (cur == Py_None) {
        PyObject_SetAttrString((PyObject *)frame, "f_trace", ptk__hub_object);
    }
    Py_XDECREF(cur);
    PyObject_SetAttrString((PyObject *)frame, "f_trace_opcodes", Py_True);
    PyErr_Clear();
    PyErr_Restore(et, ev, tb);
}

/* The code object frame runs: the shadow stack's innermost entry when it
 * is frame's (no call), else the frame's. Borrowed: the frame keeps it. */
static inline PyCodeObject *
frame_code(const ptk__thread *th, PyFrameObject *frame)
{
    if (th->pub.depth > 0 && th->stack[th->pub.depth - 1].frame == frame) {
        return th->stack[th->pub.depth - 1].code;
    }
    PyCodeObject *code = PyFrame_GetCode(frame);
    Py_DECREF(code);
    return code;
}

/* handle()'s first steps on a thread marked slow: 1 if the event is one
 * the hub object delivered already (skip it). May run Python code, and so
 * let another thread swap the table: *t is read again. */
static inline __attribute__((always_inline)) int
handle_slow(ptk__table **t, ptk__thread *th, PyFrameObject *frame, int what)
{
    th->slow = 0;
    if (th->skip_frame != NULL) {
        int dup = th->skip_frame == frame && LEGACY_TH(th)->skip_kind == what;
        th->skip_frame = NULL;
        if (dup) {
            return 1;
        }
    }
    if (!th->name_tried) {
        ptk__thread_set_name(th);
    }
    if (th->tstate_watch == NULL) {
        ptk__thread_watch(th); /* to hear of the thread's end */
    }
    *t = ptk__current;
    return 0;
}

/* A CALL: its origin, and the frame pushed on the shadow stack. -1 when
 * out of memory (the event is dropped). */
static inline __attribute__((always_inline)) int
handle_call(ptk__thread *th, ptk_event *ev, PyFrameObject *frame,
            PyCodeObject *code, PyObject *arg)
{
    ev->arg = Py_None; /* 3.12.0/1 pass the exception on throw() */
    if (code->co_flags & GEN_FLAGS) {
        int oparg = 0;
        int op = opcode_at_lasti(frame, code, &oparg);
        if (op == op_resume) {
            ev->origin = oparg == 0 ? PTK_ORIGIN_START : PTK_ORIGIN_RESUME;
        }
        else if (arg != Py_None && arg != NULL &&
                 PyExceptionInstance_Check(arg)) {
            /* 3.12.0/1: throw() or close() resumed it at its yield.
             * Remember where, for the RETURN below. */
            ev->origin = PTK_ORIGIN_THROW;
            LEGACY_TH(th)->thrown_frame = frame;
            LEGACY_TH(th)->thrown_lasti = PyFrame_GetLasti(frame);
        }
    }
    else {
        ev->origin = PTK_ORIGIN_START;
    }
    if (ptk__stack_push(th, code, frame) < 0) {
        ptk__hub_out_of_memory("the shadow stack");
        return -1;
    }
    ev->depth = th->pub.depth;
    return 0;
}

/* A RETURN: how the frame ends (return, yield or unwind), delivered, and
 * the frame popped from the shadow stack. */
static inline __attribute__((always_inline)) void
handle_return(ptk__table *t, ptk__thread *th, ptk_event *ev,
              PyFrameObject *frame, PyCodeObject *code, PyObject *arg,
              uint64_t rejected)
{
    if (arg == Py_None && unwind_arg_is_none) {
        int op = opcode_at_lasti(frame, code, NULL);
        if (op >= 0 && op != op_return_value && op != op_return_const &&
            op != op_yield_value) {
            ev->arg = NULL;
        }
        /* Still at the yield that throw() resumed it at: the exception
         * unwinds it from there (a caught exception followed by a yield
         * of None at that same yield reads the same: taken as unwind). */
        else if (op == op_yield_value && LEGACY_TH(th)->thrown_frame == frame &&
                 LEGACY_TH(th)->thrown_lasti == PyFrame_GetLasti(frame)) {
            ev->arg = NULL;
        }
    }
    if (LEGACY_TH(th)->thrown_frame == frame) {
        LEGACY_TH(th)->thrown_frame = NULL;
    }
    if (ev->arg == NULL) {
        ev->origin = PTK_ORIGIN_UNWIND;
    }
    else if (code->co_flags & GEN_FLAGS) {
        ev->origin = is_yield(frame, code) ? PTK_ORIGIN_YIELD
                                          : PTK_ORIGIN_RETURN;
    }
    else {
        ev->origin = PTK_ORIGIN_RETURN;
    }
    /* Where is this frame on the shadow stack? */
    int32_t pos = -1;
    for (int32_t i = th->pub.depth - 1; i >= 0; i--) {
        if (th->stack[i].frame == frame) {
            pos = i;
            break;
        }
    }
    ev->depth = pos >= 0 ? pos + 1 : -1;
    if (t->nsub[PTK_EV_RETURN]) {
        ptk__deliver_judged(t, th, ev, rejected);
    }
    if (pos >= 0) {
        th->pub.depth = pos;
        ptk__cstack_pop_stale(th, pos + 1);
    }
}

/* The event of a hook's call: kind what, in frame running code. */
static inline __attribute__((always_inline)) void
frame_event(ptk_event *ev, ptk__thread *th, int what, PyCodeObject *code,
            PyObject *arg, PyFrameObject *frame)
{
    ev->struct_size = sizeof *ev;
    ev->kind = (ptk_event_kind)what;
    ev->origin = PTK_ORIGIN_UNKNOWN;
    ev->code = code;
    ev->arg = arg;
    ev->thread = &th->pub;
    ev->depth = th->pub.depth;
    ev->line = -1;
    ev->time_ns = 0;
    ev->frame_ = frame;
    ev->lasti_ = -1;
    ev->target = -1;
    ev->c_self = NULL;
}

/* Inlined into each hook: one call level less per event. */
static inline __attribute__((always_inline)) int
handle(ptk__table *t, ptk__thread *th, PyFrameObject *frame, int what,
       PyObject *arg)
{
    if (th->slow && handle_slow(&t, th, frame, what)) {
        return 0;
    }
    PyCodeObject *code = frame_code(th, frame);
    /* looked up once, for ptk__code_dead and the delivery */
    uint64_t rejected = t->code_filtered ? ptk__code_rejected(t, code) : 0;
    if (ptk__rejected_by_all(t, rejected)) {
        /* No subscriber's filter selects this code (ptk__code_dead):
         * nothing to deliver, nothing pushed (its RETURN finds no entry),
         * no lines. */
        if (what == PyTrace_CALL && t->need_trace) {
            frame_lines_off(frame);
        }
        return 0;
    }
    ptk_event ev;
    frame_event(&ev, th, what, code, arg, frame);
    switch (what) {
    case PyTrace_CALL:
        if (handle_call(th, &ev, frame, code, arg) < 0) {
            return 0;
        }
        break;
    case PyTrace_RETURN:
        handle_return(t, th, &ev, frame, code, arg, rejected);
        return 0;
    case PyTrace_C_CALL: {
        const void *fn, *cself;
        ptk__c_identity(arg, &fn, &cself);
        if (ptk__cstack_push(th, fn, cself) < 0) {
            ptk__hub_out_of_memory("the stack of C calls");
            return 0;
        }
        break;
    }
    case PyTrace_C_RETURN:
    case PyTrace_C_EXCEPTION: {
        int i = ptk__cstack_match(th, arg);
        if (i < 0) {
            return 0; /* no matching C_CALL: drop, keep the pairs balanced */
        }
        ptk__cstack_truncate(th, i);
        break;
    }
    case PyTrace_LINE:
        ev.line = PyFrame_GetLineNumber(frame);
        if (ptk__disable_records & (int)PTK_MASK(PTK_EV_LINE)) {
            int st = ptk__code_line_state(code, ev.line);
            if (st == PTK__LINE_OFF) {
                frame_lines_off(frame);
            }
            if (st != PTK__LINE_DELIVER) {
                return 0; /* every LINE subscriber disabled it */
            }
        }
        if (t->nsub[PTK_EV_LINE] && ptk__deliver_judged(t, th, &ev, rejected)) {
            frame_lines_off(frame);
        }
        return 0;
    default:
        break;
    }
    if (t->nsub[what]) {
        ptk__deliver_judged(t, th, &ev, rejected);
    }
    return 0;
}

/* A LINE for t->line_one, the only LINE subscriber (the hot path: no
 * DISABLE records, no failure, no exception pending): what handle() and
 * the dispatch loop do for it, with the thread's reused event and the
 * code object's verdict the only filter test; then ptk__deliver_solo. */
static inline __attribute__((always_inline)) void
line_lane(ptk__table *t, ptk__thread *th, ptk__sub *s, PyFrameObject *frame,
          PyCodeObject *code, int line)
{
    if (s->filter != NULL && t->code_filtered &&
        (ptk__code_rejected(t, code) & ((uint64_t)1 << s->slot))) {
        return; /* its filter does not select this code */
    }
    ptk_event *ev = &LEGACY_HOT(th)->ev_line; /* kind, arg and the rest set once */
    ev->code = code;
    ev->depth = th->pub.depth;
    ev->line = line;
    ev->frame_ = frame;
    if (ptk__deliver_solo(t, th, ev, s, PTK_EV_LINE)) {
        frame_lines_off(frame);
    }
}

/* ---- the two CPython hooks ------------------------------------------- */

static void
remove_here(int profile)
{
    PyThreadState *ts = PyThreadState_Get();
    unpark(ts);
    if (profile && ts->c_profilefunc == profile_fn) {
        PyEval_SetProfile(NULL, NULL);
    }
    if (!profile && ts->c_tracefunc == trace_fn) {
        PyEval_SetTrace(NULL, NULL);
    }
}

#if PTK_PARK
/* The code object of the frame that runs after frame returns; NULL when
 * that is not a Python frame. Borrowed: the thread's frames keep it. */
static PyCodeObject *
caller_code(PyFrameObject *frame)
{
    PyFrameObject *back = PyFrame_GetBack(frame);
    if (back == NULL) {
        return NULL;
    }
    PyCodeObject *code = PyFrame_GetCode(back);
    Py_DECREF(code);
    Py_DECREF(back);
    return code;
}

/* Code that runs with the trace function parked. */
static inline int
parkable(const ptk__table *t, PyCodeObject *code)
{
    return ptk__code_dead(t, code) || lines_done(t, code);
}

/* The profile function while the trace function is parked. It delivers
 * the CALL and RETURN of selected code the trace function did not see,
 * and puts the trace function back when code that needs it starts or is
 * returned to. */
static __attribute__((noinline)) int
parked_fn(ptk__table *t, PyFrameObject *frame, int what)
{
    PyThreadState *ts = PyThreadState_Get();
    if (!parked(ts)) {
        return 0; /* someone changed the trace slot under us */
    }
    if (!park_on(t)) {
        unpark(ts); /* the trace function decides from its next event */
        return 0;
    }
    if (frame == NULL) {
        return 0;
    }
    ptk__thread *th = ptk__thread_get();
    if (th == NULL) {
        return 0;
    }
    th->tstate = ts;
    if (LEGACY_TH(th)->park_frame != NULL) {
        int seen = LEGACY_TH(th)->park_frame == frame && LEGACY_TH(th)->park_kind == what;
        LEGACY_TH(th)->park_frame = NULL;
        if (seen) {
            return 0; /* the trace function handled it, then parked */
        }
    }
    PyCodeObject *code = PyFrame_GetCode(frame);
    Py_DECREF(code); /* the frame keeps it */
    if (what == PyTrace_CALL) {
        /* A frame that runs parked also has f_trace_lines off, as it
         * would have had unparked: should anything unpark the thread
         * while it runs, it still makes no LINE events. */
        if (ptk__code_dead(t, code)) {
            frame_lines_off(frame);
            return 0;
        }
        if (lines_done(t, code)) {
            frame_lines_off(frame);
        }
        else {
            unpark(ts);
            trace_frame_setup(t, frame);
        }
        return handle(t, th, frame, PyTrace_CALL, Py_None);
    }
    if (threading_pending) {
        threading_check(frame);
    }
    int rc = 0;
    if (!ptk__code_dead(t, code)) {
        rc = handle(t, th, frame, PyTrace_RETURN, Py_None);
        t = ptk__current; /* a plugin that failed may have retired t */
    }
    PyCodeObject *back = caller_code(frame);
    if (back != NULL && !parkable(t, back)) {
        unpark(ts);
    }
    return rc;
}

/* The parked profile function itself: C calls, the most frequent events
 * here, return at once. */
static int
parked_profile_fn(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    (void)obj;
    (void)arg;
    if (what != PyTrace_CALL && what != PyTrace_RETURN) {
        return 0;
    }
    return parked_fn(ptk__current, frame, what);
}
#endif

static int
profile_fn(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    (void)obj;
    ptk__table *t = ptk__current;
    if (!t->need_profile) {
        remove_here(1); /* lazily, on threads the hub could not reach */
        return 0;
    }
    ptk__thread *th = ptk__thread_get();
    if (th == NULL || frame == NULL) {
        return 0;
    }
    th->tstate = PyThreadState_Get();
    if (what == PyTrace_RETURN && threading_pending) {
        threading_check(frame);
    }
    return handle(t, th, frame, what, arg);
}

/* trace_full's LINE under DISABLE records or with a LINE lane: 1 if the
 * line is answered here (skipped, switched off, or handed to the lane). */
static inline __attribute__((always_inline)) int
trace_line_fast(ptk__table *t, ptk__thread *th, PyFrameObject *frame)
{
    PyCodeObject *code = frame_code(th, frame);
    int line = PyFrame_GetLineNumber(frame);
    /* The most frequent event under line coverage: a line every LINE
     * subscriber has disabled. Answered before any event is made, and
     * before the thread state is read (th->tstate, set at the thread's
     * earlier events, is not used here). */
    int st = ptk__disable_records & (int)PTK_MASK(PTK_EV_LINE)
                 ? ptk__code_line_state(code, line)
                 : PTK__LINE_DELIVER;
    if (st == PTK__LINE_SKIP) {
        return 1;
    }
    th->tstate = PyThreadState_Get();
    if (st == PTK__LINE_OFF) {
        frame_lines_off(frame);
#if PTK_PARK
        /* the rest of this frame needs no trace function either */
        if (may_park(t, th->tstate) && lines_done(t, code)) {
            park(th->tstate);
        }
#endif
        return 1;
    }
    if (t->line_one != NULL && !ptk__dispatch_slow &&
        !ptk__exc_pending(th->tstate)) {
        line_lane(t, th, t->line_one, frame, code, line);
        return 1;
    }
    return 0;
}

#if PTK_PARK
/* After a CALL or RETURN was delivered: park the trace function if the
 * code that runs next needs no more trace events. */
static inline __attribute__((always_inline)) void
park_after(ptk__thread *th, PyFrameObject *frame, int what)
{
    ptk__table *t = ptk__current; /* a plugin that failed may have
                                     retired the caller's table */
    PyThreadState *ts = th->tstate;
    if (may_park(t, ts)) {
        PyCodeObject *next;
        if (what == PyTrace_CALL) {
            next = PyFrame_GetCode(frame);
            Py_DECREF(next);
        }
        else {
            next = caller_code(frame);
        }
        if (next != NULL && (what == PyTrace_CALL ? lines_done(t, next)
                                                  : parkable(t, next))) {
            /* CPython calls the parked function with this same event
             * next: it must not be delivered twice */
            park(ts);
            LEGACY_TH(th)->park_frame = frame;
            LEGACY_TH(th)->park_kind = what;
        }
    }
}
#endif

static __attribute__((noinline)) int
trace_full(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    (void)obj;
    ptk__table *t = ptk__current;
    if (!t->need_trace) {
        remove_here(0);
        return 0;
    }
    ptk__thread *th = ptk__thread_get();
    if (th == NULL || frame == NULL) {
        return 0;
    }
    if (what == PyTrace_LINE && !th->slow &&
        (t->line_one != NULL || (ptk__disable_records & (int)PTK_MASK(PTK_EV_LINE))) &&
        trace_line_fast(t, th, frame)) {
        return 0;
    }
    th->tstate = PyThreadState_Get();
    if (what == PyTrace_RETURN && threading_pending) {
        threading_check(frame);
    }
    if (what == PyTrace_CALL) {
        if (t->dead_possible) {
            PyCodeObject *code = PyFrame_GetCode(frame);
            Py_DECREF(code); /* the frame keeps it */
            if (ptk__code_dead(t, code)) {
                frame_lines_off(frame);
#if PTK_PARK
                if (may_park(t, th->tstate)) {
                    park(th->tstate); /* CPython then calls parked_fn
                                         with this CALL: it ignores it */
                }
#endif
                return 0;
            }
        }
        trace_frame_setup(t, frame);
    }
    if ((what == PyTrace_CALL || what == PyTrace_RETURN) &&
        th->tstate->c_profilefunc == profile_fn) {
        return 0; /* CALL/RETURN come from the profile function: once */
    }
    int rc = handle(t, th, frame, what, arg);
#if PTK_PARK
    if (what == PyTrace_CALL || what == PyTrace_RETURN) {
        park_after(th, frame, what);
    }
#endif
    return rc;
}

/* A LINE for t->line_one while no LINE was ever disabled (branch coverage
 * on 3.11 takes every line: nearly every event of its run), in a frame on
 * top of the thread's shadow stack: what trace_full does for it, without
 * its tests of the other kinds and the registers they need. Anything else
 * goes to trace_full. */
static __attribute__((noinline)) int
trace_line_one(PyObject *obj, PyFrameObject *frame, PyObject *arg)
{
    ptk__thread *th = ptk__tls;
    ptk__table *t = ptk__current;
    if (t->line_one != NULL && t->need_trace && th != NULL && !th->slow &&
        th->pub.depth > 0 && th->stack[th->pub.depth - 1].frame == frame) {
        th->tstate = PyThreadState_Get();
        if (!ptk__exc_pending(th->tstate)) {
            line_lane(t, th, t->line_one, frame, th->stack[th->pub.depth - 1].code,
                      PyFrame_GetLineNumber(frame));
            return 0;
        }
    }
    return trace_full(obj, frame, PyTrace_LINE, arg);
}

/* The trace function. The most frequent event under line coverage, a line
 * every LINE subscriber has disabled in the code object of the thread's
 * last question (ptk__code_line_state's cache), is answered here, in a
 * function small enough to save almost no registers. The most frequent one
 * under branch coverage, a line for the only LINE subscriber when none was
 * ever disabled, goes to trace_line_one; trace_full does the rest, and asks
 * again where these could not answer. */
static int
trace_fn(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    if (what == PyTrace_LINE && frame != NULL) {
        if (!ptk__dispatch_slow) { /* no DISABLE records, no failure pending */
            return trace_line_one(obj, frame, arg);
        }
        if (ptk__disable_records & (int)PTK_MASK(PTK_EV_LINE)) {
            ptk__thread *th = ptk__tls;
            if (ptk__current->need_trace && th != NULL && !th->slow && th->pub.depth > 0 &&
                th->stack[th->pub.depth - 1].frame == frame &&
                th->stack[th->pub.depth - 1].code == ptk__last_code &&
                ptk__last_code != NULL &&
                ptk__rec_line_state(ptk__last_rec, PyFrame_GetLineNumber(frame)) ==
                    PTK__LINE_SKIP) {
                return 0;
            }
        }
    }
    return trace_full(obj, frame, what, arg);
}

/* ---- installing --------------------------------------------------------- */

static int
set_here(int profile, int on)
{
    PyThreadState *ts = PyThreadState_Get();
    unpark(ts);
    if (profile) {
        if (on && ts->c_profilefunc != profile_fn) {
            PyEval_SetProfile(profile_fn, ptk__hub_object);
        }
        else if (!on && ts->c_profilefunc == profile_fn) {
            PyEval_SetProfile(NULL, NULL);
        }
        if (PyErr_Occurred()) {
            return -1;
        }
        return (ts->c_profilefunc == profile_fn) == (on != 0) ? 0 : -1;
    }
    if (on && ts->c_tracefunc != trace_fn) {
        PyEval_SetTrace(trace_fn, ptk__hub_object);
    }
    else if (!on && ts->c_tracefunc == trace_fn) {
        PyEval_SetTrace(NULL, NULL);
    }
    if (PyErr_Occurred()) {
        return -1;
    }
    return (ts->c_tracefunc == trace_fn) == (on != 0) ? 0 : -1;
}

/* Installs (on=1) on every thread of the interpreter, or removes ours
 * (on=0) from threads other than this one where that can be done now;
 * the rest remove themselves at their next event. */
static void
set_all(int profile, int on)
{
    PyThreadState *me = PyThreadState_Get();
    PyInterpreterState *interp = PyThreadState_GetInterpreter(me);
#if PTK_HAVE_SETPROFILE_ALLTHREADS
    if (on) {
        if (profile) {
            PyEval_SetProfileAllThreads(profile_fn, ptk__hub_object);
        }
        else {
            PyEval_SetTraceAllThreads(trace_fn, ptk__hub_object);
        }
        PyErr_Clear();
        return;
    }
#endif
    for (PyThreadState *ts = PyInterpreterState_ThreadHead(interp); ts;
         ts = PyThreadState_Next(ts)) {
        if (ts == me) {
            continue;
        }
        Py_tracefunc cur = profile ? ts->c_profilefunc : ts->c_tracefunc;
        Py_tracefunc ours = profile ? profile_fn : trace_fn;
        if (on == (cur == ours)) {
            continue;
        }
#if PTK_HAVE_PRIVATE_SETPROFILE_TSTATE
        if (profile) {
            _PyEval_SetProfile(ts, on ? profile_fn : NULL,
                               on ? ptk__hub_object : NULL);
        }
        else {
            _PyEval_SetTrace(ts, on ? trace_fn : NULL,
                             on ? ptk__hub_object : NULL);
        }
        PyErr_Clear();
#endif
    }
}

/* threading.setprofile / settrace: new threading threads call the hub
 * object first, which installs the C functions there. The hub does not
 * import threading for it: until the program has, no thread can start
 * through it. A hook wanted before then is set when threading's module
 * body returns (threading_pending: threading_check, at the RETURN events
 * of module bodies). */
static PyObject *saved_thread_hook[2];
static int thread_hook_want[2];    /* the hub wants threading's hook */
static int thread_hook_applied[2]; /* and has set it */

/* Sets or takes back threading's hooks as thread_hook_want says, where
 * threading is imported (without importing it). */
static void
sync_threading_hooks(void)
{
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyObject *name = PyUnicode_FromString("threading");
    PyObject *threading = name ? PyImport_GetModule(name) : NULL;
    PyErr_Clear();
    threading_pending = 0;
    for (int profile = 0; profile < 2; profile++) {
        const char *get = profile ? "getprofile" : "gettrace";
        const char *set = profile ? "setprofile" : "settrace";
        if (thread_hook_want[profile] && !thread_hook_applied[profile]) {
            PyObject *saved = threading ? PyObject_CallMethod(threading, get, NULL) : NULL;
            PyObject *r = saved ? PyObject_CallMethod(threading, set, "O", ptk__hub_object)
                                : NULL;
            if (r != NULL) {
                Py_XSETREF(saved_thread_hook[profile], saved);
                saved = NULL;
                thread_hook_applied[profile] = 1;
            }
            else {
                threading_pending = 1; /* not imported (or not yet whole) */
            }
            Py_XDECREF(r);
            Py_XDECREF(saved);
            PyErr_Clear();
        }
        else if (!thread_hook_want[profile] && thread_hook_applied[profile]) {
            PyObject *cur = threading ? PyObject_CallMethod(threading, get, NULL) : NULL;
            if (cur == ptk__hub_object) {
                PyObject *prev = saved_thread_hook[profile] ? saved_thread_hook[profile]
                                                            : Py_None;
                Py_XDECREF(PyObject_CallMethod(threading, set, "O", prev));
            }
            Py_XDECREF(cur);
            Py_CLEAR(saved_thread_hook[profile]);
            thread_hook_applied[profile] = 0;
            PyErr_Clear();
        }
    }
    Py_XDECREF(threading);
    Py_XDECREF(name);
    PyErr_Restore(et, ev, tb);
}

static void
set_threading_hook(int profile, int on)
{
    if (thread_hook_want[profile] != on) {
        thread_hook_want[profile] = on;
        sync_threading_hooks();
    }
}

/* A RETURN while a threading hook waits: a module body that returns may
 * be threading's (or come after threading was imported on a thread the
 * hub does not trace): the hooks are synced then. A threading whose body
 * has not yet defined setprofile (a module it imports returning) leaves
 * the hook waiting for the next one. */
static __attribute__((noinline)) void
threading_check(PyFrameObject *frame)
{
    PyCodeObject *code = PyFrame_GetCode(frame);
    int body = !(code->co_flags & CO_NEWLOCALS) &&
               PyUnicode_CompareWithASCIIString(code->co_name, "<module>") == 0;
    Py_DECREF(code);
    if (body) {
        sync_threading_hooks();
    }
}

/* ---- the frame hook (frame_hook.h) -------------------------------------- */

static int frame_hook_deep; /* taken out for good: a thread ran too deep */

#if PTK_SUSPEND
static inline int
module_body(PyCodeObject *code)
{
    return !(code->co_flags & CO_NEWLOCALS) &&
           PyUnicode_CompareWithASCIIString(code->co_name, "<module>") == 0;
}

/* Can a frame of code run suspended? Code no subscriber selects (judged
 * with the frame's own globals: no frame of it runs yet to ask); or code
 * whose lines are all done (lines_done) while nobody takes CALL or RETURN,
 * reads depth or filters by it: no event of it would be delivered, and
 * nobody counts the frame. */
static inline int
quiet_in(const ptk__table *t, PyCodeObject *code, PyObject *globals)
{
    if (ptk__code_dead_in(t, code, globals)) {
        return 1;
    }
    return !(t->mask & (PTK_MASK(PTK_EV_CALL) | PTK_MASK(PTK_EV_RETURN))) &&
           !t->need_stack && !t->depth_filtered && lines_done(t, code);
}

/* A frame of quiet code starting on a thread whose functions are the
 * hub's (set or parked) suspends the thread for it; selected code starting
 * in a suspended thread puts the trace function back for it (its CALL then
 * comes as always, and it may park). Nothing changes inside the hub's own
 * callbacks (tstate->tracing). */
int
ptk__frame_enter(PyThreadState *ts, PyCodeObject *code, PyObject *globals,
                 ptk__frame_save *save)
{
    if (ts->tracing) {
        return 0;
    }
    save->how = threading_pending && module_body(code) ? PTK__FRAME_BODY : 0;
    const ptk__table *t = ptk__current;
    if (!park_on(t)) {
        return save->how != 0;
    }
    int susp = suspended(ts);
    if (!susp && !parked(ts) && !trace_alone(ts)) {
        return save->how != 0; /* another function is set besides ours */
    }
    int quiet = quiet_in(t, code, globals);
    if (quiet == susp) {
        /* A frame that needs the trace function, starting parked: it gets
         * it now. Its CALL would unpark too, but a frame can run lines
         * with no CALL first (a generator resumed into a pending signal's
         * exception raises before its CALL). */
        if (!quiet && parked(ts) && !lines_done(t, code)) {
            unpark(ts);
        }
        return save->how != 0;
    }
    save->trace = ts->c_tracefunc;
    save->profile = ts->c_profilefunc;
    if (susp) {
        slots_set(ts, trace_fn, NULL);
        save->how |= PTK__FRAME_RESUMED;
    }
    else {
        slots_set(ts, NULL, NULL);
        save->how |= PTK__FRAME_SUSPENDED;
    }
    return 1;
}

/* The frame has ended (returned, raised or yielded): the functions go back
 * to what they were, unless someone changed them meanwhile (then they are
 * left as found: the hub's own changes unsuspend first, unpark). A module
 * body that ends while threading's hook waits syncs it, as its RETURN
 * would have (it made none, suspended). */
void
ptk__frame_exit(PyThreadState *ts, ptk__frame_save *save)
{
    if (save->how & PTK__FRAME_SUSPENDED) {
        if (suspended(ts)) {
            slots_set(ts, save->trace, save->profile);
        }
    }
    else if (save->how & PTK__FRAME_RESUMED) {
        /* back to suspended for the rest of the quiet frame around it,
         * while the table still parks and the hook is there to resume
         * (else the trace function stays) */
        if (!frame_hook_deep && park_on(ptk__current) &&
            (parked(ts) || trace_alone(ts))) {
            slots_set(ts, NULL, NULL);
        }
    }
    if ((save->how & PTK__FRAME_BODY) && threading_pending && ts->tracing == 0) {
        PyThreadState_EnterTracing(ts);
        sync_threading_hooks();
        PyThreadState_LeaveTracing(ts);
    }
}

void
ptk__frame_hook_too_deep(void)
{
    frame_hook_deep = 1;
    ptk__frame_hook_set(0);
    unpark_all(); /* suspended threads too: nothing would resume them */
}
#endif /* PTK_SUSPEND; without it frame_hook.c has no hook to call these */

/* The frame hook is wanted while the table parks (excluded code is what it
 * suspends), unless PYTRACEKIT_FRAME_HOOK=0 (to compare, or to rule it
 * out) or a thread ran too deep with it (ptk__frame_hook_too_deep). */
static void
sync_frame_hook(const ptk__table *t)
{
    static int refused = -1;
    if (refused < 0) {
        const char *env = getenv("PYTRACEKIT_FRAME_HOOK");
        refused = env != NULL && strcmp(env, "0") == 0;
    }
    ptk__frame_hook_set(PTK_SUSPEND && !refused && !frame_hook_deep && park_on(t));
}

/* 3.12 enables opcode events only if some frame's f_trace_opcodes was set
 * before the trace function is installed; the flag is interpreter-wide and
 * harmless elsewhere, so it is set the same way on every version. */
static void
prime_opcodes(void)
{
    if (opcode_primed) {
        return;
    }
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    Py_XDECREF(ptk__run_snippet("import sys as _s\n_f = _s._getframe()\n"
                                "_f.f_trace_opcodes = True\n"
                                "_f.f_trace_opcodes = False\n",
                                NULL, NULL));
    PyErr_Restore(et, ev, tb);
    opcode_primed = 1;
}

static int
sync_hooks(const ptk__table *t, int install_here, char **errmsg);

static int
legacy_sync(const ptk__table *t, int install_here, char **errmsg)
{
    /* What the hub itself runs here (import threading, its set/get hook
     * calls) must not reach the plugins as the program's events. */
    PyThreadState *me = PyThreadState_Get();
    if (install_here && (t->need_profile || t->need_trace)) {
        ptk__seed_stack(1);
    }
    PyThreadState_EnterTracing(me);
    int rc = sync_hooks(t, install_here, errmsg);
    PyThreadState_LeaveTracing(me);
    return rc;
}

static int
sync_hooks(const ptk__table *t, int install_here, char **errmsg)
{
    int rc = PTK_OK;
    PyThreadState *me = PyThreadState_Get();
    unpark_all(); /* threads park again at their next excluded start */
    sync_frame_hook(t);
    if ((t->mask & PTK_MASK(PTK_EV_OPCODE)) && !opcode_primed) {
        int had = me->c_tracefunc == trace_fn;
        if (had) {
            set_here(0, 0);
        }
        prime_opcodes();
        if (had) {
            set_here(0, 1);
        }
        /* frames already running on this thread */
        for (PyFrameObject *f = PyEval_GetFrame(); f; ) {
            want_opcodes(f);
            PyFrameObject *back = PyFrame_GetBack(f);
            Py_XDECREF(back);
            f = back;
        }
    }
    for (int profile = 1; profile >= 0; profile--) {
        int need = profile ? t->need_profile : t->need_trace;
        if (need) {
            if (t->all_threads) {
                set_all(profile, 1);
                set_threading_hook(profile, 1);
            }
            if (install_here || t->all_threads) {
                if (set_here(profile, 1) < 0) {
                    char *why = PyErr_Occurred() ? ptk__format_exception()
                                                 : NULL;
                    rc = ptk__err(errmsg, PTK_EBUSY,
                                  "could not install the %s function%s%s",
                                  profile ? "profile" : "trace",
                                  why ? ": " : " (refused by an audit hook?)",
                                  why ? why : "");
                    free(why);
                }
            }
        }
        else {
            set_threading_hook(profile, 0);
            set_here(profile, 0);
            set_all(profile, 0);
        }
        if (!t->all_threads && need) {
            set_threading_hook(profile, 0);
        }
    }
    return rc;
}

/* ---- the hub object ----------------------------------------------------- */

static int
event_from_name(PyObject *name)
{
    static const char *const names[] = {"call", "exception", "line",
                                        "return", "c_call", "c_exception",
                                        "c_return", "opcode"};
    for (int i = 0; i < 8; i++) {
        if (PyUnicode_CompareWithASCIIString(name, names[i]) == 0) {
            return i;
        }
    }
    return -1;
}

/* Called as a Python-level hook: by threading's start hook in a new thread,
 * or after `sys.settrace(sys.gettrace())`. Puts the C functions (back) in
 * place for this thread and delivers the event it was called for. */
static PyObject *
hub_call(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    PyObject *frame, *name, *arg;
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs)) {
        PyErr_SetString(PyExc_TypeError, "the hub takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OUO", &frame, &name, &arg)) {
        return NULL;
    }
    if (!PyFrame_Check(frame)) {
        PyErr_SetString(PyExc_TypeError, "the hub expects a frame");
        return NULL;
    }
    int what = event_from_name(name);
    PyThreadState *ts = PyThreadState_Get();
    /* The table is read anew after each call here: PyEval_SetProfile and
     * PyEval_SetTrace run the audit hooks, which may run Python code and
     * let another thread swap the table and free this one (no dispatch is
     * in progress to keep it). */
    int on;
    /* Replace whatever Python-level hook called us. */
    if (ts->c_profileobj == ptk__hub_object && ts->c_profilefunc != profile_fn) {
        on = ptk__current->need_profile;
        PyEval_SetProfile(on ? profile_fn : NULL, on ? ptk__hub_object : NULL);
    }
    if (ts->c_traceobj == ptk__hub_object && ts->c_tracefunc != trace_fn) {
        on = ptk__current->need_trace;
        PyEval_SetTrace(on ? trace_fn : NULL, on ? ptk__hub_object : NULL);
    }
    if (ptk__current->need_profile && ts->c_profilefunc != profile_fn) {
        PyEval_SetProfile(profile_fn, ptk__hub_object);
    }
    if (ptk__current->need_trace && ts->c_tracefunc != trace_fn) {
        PyEval_SetTrace(trace_fn, ptk__hub_object);
    }
    ptk__thread *th = ptk__thread_get();
    if (th != NULL) {
        th->tstate = ts;
        /* the hub is back after someone else's function: frames may have
         * ended meanwhile with no RETURN seen */
        ptk__stack_prune(th);
    }
    ptk__table *t = ptk__current;
    if (what >= 0 && th != NULL && (t->need_profile || t->need_trace)) {
        int from_profile = (PTK_MASK(what) & PTK_MASK_PROFILE) != 0;
        if (!from_profile || t->need_profile ||
            what == PyTrace_CALL || what == PyTrace_RETURN) {
            if (what == PyTrace_CALL && t->need_trace) {
                trace_frame_setup(t, (PyFrameObject *)frame);
            }
            handle(t, th, (PyFrameObject *)frame, what,
                   arg == Py_None && what == PyTrace_RETURN ? arg : arg);
        }
        th->skip_frame = (PyFrameObject *)frame;
        LEGACY_TH(th)->skip_kind = what;
        ptk__thread_mark_slow(th);
    }
    if (PyErr_Occurred()) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
hub_repr(PyObject *self)
{
    (void)self;
    return PyUnicode_FromFormat("<pytracekit hub %s>", PTK_VERSION_STRING);
}

static PyType_Slot hub_slots[] = {
    {Py_tp_call, (void *)hub_call},
    {Py_tp_repr, (void *)hub_repr},
    {Py_tp_doc, (void *)"The pytracekit hub: the object CPython's profile and "
                        "trace slots hold. Calling it (as sys.settrace("
                        "sys.gettrace()) does) puts the C hooks back."},
    {0, NULL},
};

static PyType_Spec hub_spec = {
    .name = "pytracekit.Hub",
    .basicsize = sizeof(PyObject),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = hub_slots,
};

/* ---- probing what this interpreter does ------------------------------- */


static int
probe_fn(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    (void)obj;
    if (what == PyTrace_RETURN) {
        PyCodeObject *code = PyFrame_GetCode(frame);
        if (PyUnicode_CompareWithASCIIString(code->co_name, "_ptk_probe") == 0) {
            unwind_arg_is_none = arg == Py_None;
        }
        Py_DECREF(code);
    }
    return 0;
}

/* ---- the program's own setprofile/settrace ---------------------------- */

/* sys.setprofile, sys.settrace and PyEval_Set* (also the AllThreads
 * forms, once per thread from the calling thread) raise these audit events
 * before they replace a thread's function: remember when. The hub's own
 * calls are made while tracing (under PyThreadState_EnterTracing, or from
 * the hub object that CPython calls as a hook): those are not counted. */
static uint64_t last_set_ns[2];

static int
audit_hook(const char *event, PyObject *args, void *data)
{
    (void)args;
    (void)data;
    if (event[0] == 's' && strncmp(event, "sys.set", 7) == 0) {
        int profile = strcmp(event + 7, "profile") == 0;
        if (!profile && strcmp(event + 7, "trace") != 0) {
            return 0;
        }
        /* the slots are about to change: the hub's state must be the
         * plain one (the trace function set) for whoever reads or
         * replaces them */
        unpark(PyThreadState_Get());
        if (PyThreadState_Get()->tracing == 0) {
            uint64_t now = ptk__clock_ns();
            last_set_ns[profile] = now;
            if (ptk__tls != NULL && ptk__hub_backend == PTK_BACKEND_LEGACY) {
                LEGACY_TH(ptk__tls)->hook_set_ns[profile] = now;
            }
        }
    }
    return 0;
}

static void
legacy_before_stop(struct ptk_session *s)
{
    const ptk__table *t = ptk__current;
    if (ptk__hub_backend != PTK_BACKEND_LEGACY || ptk__hub_object == NULL ||
        !(t->need_profile || t->need_trace)) {
        return;
    }
    PyInterpreterState *interp = PyInterpreterState_Get();
    for (size_t i = 0; i < ptk__thread_count(); i++) {
        ptk__thread *th = ptk__thread_at(i);
        if (th->tstate == NULL ||
            (s->threads != PTK_THREADS_ALL && &th->pub != s->owner)) {
            continue;
        }
        PyThreadState *ts = PyInterpreterState_ThreadHead(interp);
        while (ts != NULL && ts != th->tstate) {
            ts = PyThreadState_Next(ts);
        }
        if (ts == NULL) {
            continue; /* the thread has ended */
        }
        for (int profile = 1; profile >= 0; profile--) {
            if (!(profile ? t->need_profile : t->need_trace) ||
                (profile ? ts->c_profilefunc == profile_fn
                         : ts->c_tracefunc == trace_fn) ||
                (profile ? ts->c_profileobj : ts->c_traceobj) ==
                    ptk__hub_object) {
                continue;
            }
            ptk__thread_set_name(th);
            uint64_t at = LEGACY_TH(th)->hook_set_ns[profile] > s->t_start
                              ? LEGACY_TH(th)->hook_set_ns[profile]
                              : last_set_ns[profile];
            char when[64] = "at a time not known";
            if (at > s->t_start) {
                snprintf(when, sizeof when, "%.3f s after the start",
                         (double)(at - s->t_start) / 1e9);
            }
            char *line = ptk__asprintf(
                "%spytracekit: on thread '%s' (%llu) the program replaced "
                "pytracekit's %s function (sys.%s or threading.%s) %s: the "
                "events of that thread after it are missing from these "
                "reports\n",
                s->notes ? s->notes : "", th->pub.name ? th->pub.name : "?",
                (unsigned long long)th->pub.ident,
                profile ? "profile" : "trace",
                profile ? "setprofile" : "settrace",
                profile ? "setprofile_all_threads" : "settrace_all_threads",
                when);
            if (line != NULL) {
                free(s->notes);
                s->notes = line;
            }
        }
    }
}

static int
legacy_claim(char **errmsg)
{
    if (ptk__hub_object != NULL) {
        return PTK_OK;
    }
    if (PySys_AddAuditHook(audit_hook, NULL) < 0) {
        PyErr_Clear(); /* refused by another hook: no times in the notes */
    }
    PyObject *type = PyType_FromSpec(&hub_spec);
    if (type == NULL) {
        return ptk__err(errmsg, PTK_EPYTHON, "cannot create the hub type");
    }
    ptk__hub_object = PyObject_CallNoArgs(type);
    Py_DECREF(type); /* the instance keeps its heap type alive */
    if (ptk__hub_object == NULL) {
        PyErr_Clear();
        return ptk__err(errmsg, PTK_EPYTHON, "cannot create the hub object");
    }
    find_lines_member();
    op_return_value = ptk__ops.return_value;
    op_return_const = ptk__ops.return_const;
    op_yield_value = ptk__ops.yield_value;
    op_resume = ptk__ops.resume;

    /* What does RETURN's arg look like when an exception unwinds a frame? */
    PyThreadState *ts = PyThreadState_Get();
    Py_tracefunc prev = ts->c_profilefunc;
    PyObject *prevobj = Py_XNewRef(ts->c_profileobj);
    PyEval_SetProfile(probe_fn, NULL);
    PyObject *ns = ptk__run_snippet("def _ptk_probe():\n    raise ValueError\n"
                                    "try:\n    _ptk_probe()\n"
                                    "except ValueError:\n    pass\n",
                                    NULL, NULL);
    if (ns != NULL) {
        PyDict_Clear(ns); /* the function and its globals: no cycle left */
    }
    Py_XDECREF(ns);
    PyEval_SetProfile(prev, prevobj);
    Py_XDECREF(prevobj);
    PyErr_Clear();
    return PTK_OK;
}

static void
legacy_reset(void)
{
    ptk__hub_object = NULL; /* went with the interpreter */
    opcode_primed = 0;
    for (int i = 0; i < 2; i++) {
        saved_thread_hook[i] = NULL;
        thread_hook_want[i] = 0;
        thread_hook_applied[i] = 0;
    }
    threading_pending = 0;
}

/* ---- the backend's table ------------------------------------------------ */

static int
legacy_available(char **errmsg)
{
    (void)errmsg;
    return PTK_OK; /* every supported CPython has the profile/trace hooks */
}

static void
legacy_release(void)
{
    /* the hooks go lazily (remove_here) once the table wants nothing */
}

static unsigned int
legacy_events(void)
{
    return ptk__fed_mask(PTK_FEED_LEGACY);
}

/* The plan: which of CPython's two hooks the table needs, and LINE's
 * lane. CALL and RETURN reach both hooks: they are taken from the trace
 * function when it is needed anyway and nobody wants C events, so that a
 * Python call costs two callbacks, not four. */
static void
legacy_plan(ptk__table *t)
{
    unsigned c_events = PTK_MASK(PTK_EV_C_CALL) | PTK_MASK(PTK_EV_C_RETURN) |
                        PTK_MASK(PTK_EV_C_EXCEPTION);
    unsigned py_events = PTK_MASK(PTK_EV_CALL) | PTK_MASK(PTK_EV_RETURN);
    ptk__sub *line = t->nsub[PTK_EV_LINE] == 1 ? &t->subs[PTK_EV_LINE][0] : NULL;
    if (line != NULL && line->only_thread == NULL && !line->filter_call &&
        line->on_event != NULL) {
        t->line_one = line;
    }
    t->need_trace = (t->mask & PTK_MASK_TRACE) != 0;
    t->need_profile =
        (t->mask & c_events) != 0 ||
        (!t->need_trace && ((t->mask & py_events) || t->need_stack));
}

/* A greenlet switch: the frames of the greenlet entered resume where it
 * left them, with no frame start for the frame hook or the parked profile
 * function to see, and the thread may be parked or suspended for a quiet
 * frame of the greenlet left: the trace function comes back (greenlet then
 * sets CPython's tracing flag from the functions, as its trace hook
 * returns). */
static void
legacy_exec_switched(ptk__thread *th)
{
    (void)th;
    PyThreadState *ts = PyThreadState_Get();
#if PTK_SUSPEND
    /* and CPython's flag, which greenlet keeps per greenlet, from the
     * functions the thread has now */
    if (parked(ts) || suspended(ts)) {
        slots_set(ts, trace_fn, NULL);
    }
    else {
        slots_set(ts, ts->c_tracefunc, ts->c_profilefunc);
    }
#else
    unpark(ts);
#endif
}

const ptk__backend_ops ptk__legacy_ops = {
    .id = PTK_BACKEND_LEGACY,
    .name = "legacy",
    .available = legacy_available,
    .claim = legacy_claim,
    .release = legacy_release,
    .plan = legacy_plan,
    .sync = legacy_sync,
    .before_stop = legacy_before_stop,
    .reset = legacy_reset,
    .thread_hot_init = legacy_thread_hot_init,
    .events = legacy_events,
    .exec_switched = legacy_exec_switched,
};
