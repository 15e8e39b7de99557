/* bad_nocb: subscribes to call and line but has no on_event (rejected with PTK_EMASK). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <pytracekit/plugin.h>

static int __attribute__((unused))
on_event(void *state, const ptk_event *ev)
{
    (void)state;
    (void)ev;
    return PTK_OK;
}

static void __attribute__((unused))
on_ref(void *state, PyObject *obj, ptk_event_kind kind)
{
    (void)state;
    (void)obj;
    (void)kind;
}

static const ptk_plugin_desc desc = {
    PTK_PLUGIN_HEADER,
    .name = "bad_nocb",
    .version = "1",
    .events = PTK_MASK(PTK_EV_CALL) | PTK_MASK(PTK_EV_LINE),
    .on_event = NULL,
    .on_ref = on_ref,
};

PTK_PLUGIN_DEFINE(desc)
