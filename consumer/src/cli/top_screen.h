/*
 * top_screen.h: `vmtrace top` on a terminal, through ncurses: each view
 * drawn from the top of the window, lines cut at its width and the view at
 * its height, redrawn when the window is resized; `q` quits at once; the
 * terminal is given back as it was (the alternate screen) when top ends.
 * Off a terminal (a pipe, a file) top prints its views as plain text.
 */
#ifndef VMTRACE_TOP_SCREEN_H
#define VMTRACE_TOP_SCREEN_H

#include <stdbool.h>

/* Take the terminal when stdout is one: true, or false to print plainly. */
bool vt_screen_open(void);
/* Draw text (lines ending in '\n') as the whole screen; kept for redraws. */
void vt_screen_draw(const char *text);
/* Keys pressed since the last call: true when one asks to quit (q, Q);
 * a resize redraws the last view. Returns at once. */
bool vt_screen_quit_asked(void);
/* Give the terminal back. Accepts a screen never opened. */
void vt_screen_close(void);

#endif /* VMTRACE_TOP_SCREEN_H */
