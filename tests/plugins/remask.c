/* remask: subscribes to call; its second init (a followed child's restart,
 * the static counter survives fork) also asks for ref_create, for which it
 * has no on_ref callback. The host must refuse that mask in the child as
 * it would at the first init. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <pytracekit/plugin.h>

static int inits;

static int
init(const ptk_init_args *args, void **state, unsigned int *events)
{
    (void)args;
    *state = NULL;
    if (++inits > 1) {
        *events |= PTK_MASK(PTK_EV_REF_CREATE);
    }
    return PTK_OK;
}

static int
on_event(void *state, const ptk_event *ev)
{
    (void)state;
    (void)ev;
    return PTK_OK;
}

static const ptk_plugin_desc desc = {
    PTK_PLUGIN_HEADER,
    .name = "remask",
    .version = "1",
    .description = "changes its event mask when it starts again in a child",
    .events = PTK_MASK(PTK_EV_CALL),
    .init = init,
    .on_event = on_event,
};

PTK_PLUGIN_DEFINE(desc)
