/**
 * @file pytracekit.h
 * @brief Umbrella header: everything a program linking libpytracekit needs.
 *
 * Plugins need only plugin.h; programs that run sessions include this.
 */
#ifndef PYTRACEKIT_H
#define PYTRACEKIT_H

#include "export.h"
#include "version.h"
#include "errors.h"
#include "event.h"
#include "options.h"
#include "report.h"
#include "plugin.h"
#include "services.h"
#include "session.h"
#include "process.h"

#endif /* PYTRACEKIT_H */
