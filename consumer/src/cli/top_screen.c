/*
 * top_screen.c: `vmtrace top`'s terminal (top_screen.h).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curses.h>

#include "cli/top_screen.h"

static bool on;
static char *last; /* the last view, for a redraw after a resize */

bool vt_screen_open(void)
{
	const char *term = getenv("TERM");

	if (!isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO) || !term || !*term ||
	    !strcmp(term, "dumb") || !newterm(NULL, stdout, stdin))
		return false;
	on = true;
	cbreak();               /* keys at once; Ctrl-C stays a signal */
	noecho();
	nodelay(stdscr, TRUE);  /* getch never waits */
	keypad(stdscr, TRUE);   /* a resize comes as KEY_RESIZE */
	curs_set(0);
	return true;
}

static void draw(void)
{
	const char *line = last ? last : "";

	erase();
	for (int y = 0; y < LINES && *line; y++) {
		size_t len = strcspn(line, "\n");

		mvaddnstr(y, 0, line, (int)(len < (size_t)COLS ? len : (size_t)COLS));
		line += len + (line[len] == '\n');
	}
	refresh();
}

void vt_screen_draw(const char *text)
{
	char *copy = strdup(text);

	if (copy) {
		free(last);
		last = copy;
	}
	draw();
}

bool vt_screen_quit_asked(void)
{
	int c;

	while ((c = getch()) != ERR) {
		if (c == 'q' || c == 'Q')
			return true;
		if (c == KEY_RESIZE)
			draw();
	}
	return false;
}

void vt_screen_close(void)
{
	if (on)
		endwin();
	on = false;
	free(last);
	last = NULL;
}
