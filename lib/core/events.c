/* The event table (PTK_EVENT_TABLE in event.h) made into the lookups the
 * library needs: the one event-list parser, group masks, the kinds each
 * backend feeds. */
#include "core/core.h"

#include <string.h>

#define ROW_GROUPS(K, name, groups, feeds, disable, source) groups,
#define ROW_FEEDS(K, name, groups, feeds, disable, source) feeds,
#define ROW_CHECK(K, name, groups, feeds, disable, source)                  \
    PTK__EVENT_ROW_##K,

/* The table's rows are in ptk_event_kind order: checked at compile time. */
enum { PTK_EVENT_TABLE(ROW_CHECK) PTK__EVENT_ROWS };
#define ROW_ASSERT(K, name, groups, feeds, disable, source)                 \
    _Static_assert((int)PTK__EVENT_ROW_##K == (int)PTK_EV_##K,                      \
                   "PTK_EVENT_TABLE row out of order: " #K);
PTK_EVENT_TABLE(ROW_ASSERT)
_Static_assert((int)PTK__EVENT_ROWS == (int)PTK_EV_COUNT,
               "PTK_EVENT_TABLE has a row per event kind");

static const unsigned groups_of[PTK_EV_COUNT] = {PTK_EVENT_TABLE(ROW_GROUPS)};
static const unsigned feeds_of[PTK_EV_COUNT] = {PTK_EVENT_TABLE(ROW_FEEDS)};

static const struct {
    const char *name;
    unsigned bit;
} group_names[] = {{"profile", PTK_GROUP_PROFILE},
                   {"trace", PTK_GROUP_TRACE},
                   {"all", PTK_GROUP_ALL},
                   {"ref", PTK_GROUP_REF},
                   {"branches", PTK_GROUP_BRANCHES}};

unsigned int
ptk__group_mask(unsigned group_bit)
{
    unsigned m = 0;
    for (int k = 0; k < PTK_EV_COUNT; k++) {
        if (groups_of[k] & group_bit) {
            m |= PTK_MASK(k);
        }
    }
    return m;
}

unsigned int
ptk__fed_mask(unsigned feed_bit)
{
    unsigned m = 0;
    for (int k = 0; k < PTK_EV_COUNT; k++) {
        if (feeds_of[k] & feed_bit) {
            m |= PTK_MASK(k);
        }
    }
    return m;
}

static int
is_sep(char c)
{
    return c == ',' || c == ';' || c == '+' || c == ' ';
}

int
ptk_event_parse_mask(const char *list, unsigned int *mask)
{
    unsigned int m = 0;
    const char *p = list ? list : "";
    int items = 0;
    while (*p) {
        const char *e = p;
        while (*e && !is_sep(*e)) {
            e++;
        }
        size_t n = (size_t)(e - p);
        int found = n == 0;
        for (size_t g = 0; !found && g < sizeof group_names / sizeof group_names[0]; g++) {
            if (strlen(group_names[g].name) == n &&
                !strncmp(p, group_names[g].name, n)) {
                m |= ptk__group_mask(group_names[g].bit);
                found = 1;
            }
        }
        for (int k = 0; k < PTK_EV_COUNT && !found; k++) {
            const char *name = ptk_event_name(k);
            if (strlen(name) == n && !strncmp(p, name, n)) {
                m |= PTK_MASK(k);
                found = 1;
            }
        }
        if (!found) {
            return PTK_EINVAL;
        }
        items += n > 0;
        p = *e ? e + 1 : e;
    }
    if (items == 0) {
        return PTK_EINVAL;
    }
    if (mask != NULL) {
        *mask = m;
    }
    return PTK_OK;
}
