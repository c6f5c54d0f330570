"""MATCH_RECOGNIZE, SQL:2016 row pattern recognition: the second front end of kleene.

``ast`` holds the frozen tree, ``parser`` turns text into it (lark, loaded only
when a MATCH_RECOGNIZE text is parsed), ``checks`` holds the standard's static
rules and ``printer`` writes a tree back as text.  ``import kleene`` does not
load this package.
"""
