"""The people's pages: sign-up, the campaign list, the live campaign page with its fragments,
its set-up and GM's-hand forms, the approval card and the feed's words. Drawn by the server; the
page's script only swaps fragments in (docs/architecture.md, "The campaign page")."""
