#!/usr/bin/env python3
"""Tests of tools/loadtest/prefix_workloads.py: the conversations it writes
have the shape tandem-loadtest replays (roles alternate, each ends on a user
turn, 4-8 turns), the shared system prompt is one text before varied
questions, a seed gives the same file and another seed another, and bad
flags are refused naming the flag.

usage: prefix_workloads_test.py SOURCE_DIR
"""
import json
import subprocess
import sys
import tempfile
import unittest

SOURCE_DIR = sys.argv.pop(1) if len(sys.argv) > 1 else "."
SCRIPT = f"{SOURCE_DIR}/tools/loadtest/prefix_workloads.py"


def generate(*args):
    done = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout, done.stderr


def lines_of(*args):
    code, out, err = generate(*args)
    assert code == 0, err
    return [json.loads(line) for line in out.splitlines()]


class Chat(unittest.TestCase):
    def test_conversations_have_four_to_eight_user_turns_ending_on_a_user_turn(self):
        conversations = lines_of("chat", "--conversations", "40", "--max-tokens", "24", "--seed", "5")
        self.assertEqual(len(conversations), 40)
        turn_counts = set()
        for conversation in conversations:
            messages = conversation["messages"]
            roles = [m["role"] for m in messages]
            self.assertEqual(roles, ["user", "assistant"] * (len(roles) // 2) + ["user"])
            turns = roles.count("user")
            self.assertTrue(4 <= turns <= 8, turns)
            turn_counts.add(turns)
            self.assertEqual(conversation["max_tokens"], 24)
            for message in messages:
                self.assertTrue(message["content"].strip())
        self.assertGreater(len(turn_counts), 2)  # the lengths vary

    def test_turns_and_word_bounds_are_kept(self):
        for conversation in lines_of("chat", "--conversations", "10", "--turns", "2,2",
                                     "--user-words", "5,5", "--reply-words", "3,3"):
            words = [len(m["content"].split()) for m in conversation["messages"]]
            self.assertEqual(words, [5, 3, 5])

    def test_a_seed_gives_the_same_file_and_another_seed_another(self):
        self.assertEqual(generate("chat", "--conversations", "3", "--seed", "7")[1],
                         generate("chat", "--conversations", "3", "--seed", "7")[1])
        self.assertNotEqual(generate("chat", "--conversations", "3", "--seed", "7")[1],
                            generate("chat", "--conversations", "3", "--seed", "8")[1])


class SystemPrompt(unittest.TestCase):
    def test_one_system_prompt_before_varied_questions(self):
        requests = lines_of("system-prompt", "--requests", "12", "--system-words", "300", "--seed", "3")
        self.assertEqual(len(requests), 12)
        systems = {r["messages"][0]["content"] for r in requests}
        self.assertEqual(len(systems), 1)
        self.assertEqual(len(systems.pop().split()), 300)
        questions = [r["messages"][1] for r in requests]
        self.assertTrue(all(q["role"] == "user" for q in questions))
        self.assertGreater(len({q["content"] for q in questions}), 10)
        self.assertTrue(all(8 <= len(q["content"].split()) <= 24 for q in questions))
        self.assertTrue(all(r["max_tokens"] == 32 for r in requests))

    def test_another_seed_gives_another_system_prompt(self):
        first = lines_of("system-prompt", "--requests", "1", "--seed", "1")[0]["messages"][0]
        second = lines_of("system-prompt", "--requests", "1", "--seed", "2")[0]["messages"][0]
        self.assertNotEqual(first["content"], second["content"])


class BadFlags(unittest.TestCase):
    def test_refusals_name_the_flag(self):
        for args, flag in [(["chat", "--conversations", "2", "--turns", "5,3"], "--turns"),
                           (["chat", "--conversations", "0"], "--conversations"),
                           (["system-prompt", "--requests", "2", "--question-words", "x"],
                            "--question-words"),
                           (["system-prompt"], "--requests")]:
            code, out, err = generate(*args)
            self.assertEqual(code, 2, args)
            self.assertIn(flag, err)
            self.assertEqual(out, "")

    def test_a_corpus_without_text_lines_names_its_line(self):
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as corpus:
            corpus.write('{"text": "fine words"}\n{"title": "no text"}\n')
            corpus.flush()
            code, _, err = generate("chat", "--conversations", "1", "--corpus", corpus.name)
            self.assertEqual(code, 1)
            self.assertIn(f"{corpus.name}:2", err)


if __name__ == "__main__":
    unittest.main()
