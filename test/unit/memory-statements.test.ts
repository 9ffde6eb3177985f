import assert from 'node:assert/strict';
import { factsIn, valueKey } from '../../workflows/memory/statements.js';

const read = (text: string) => factsIn(text).map((f) => [f.attribute, f.value, [...text].slice(f.start, f.end).join('')]);

describe('the offline memory engine', () => {
  it('reads the facts a person states about themselves, each with the exact words it came from', () => {
    assert.deepEqual(read('Hi! My name is Ada Lovelace. I live in London, and my email is ada@example.com.'), [
      ['name', 'Ada Lovelace', 'My name is Ada Lovelace'],
      ['lives in', 'London', 'I live in London'],
      ['email', 'ada@example.com', 'my email is ada@example.com'],
    ]);
    assert.deepEqual(read("I'm 36 years old and I work at Initech as well.\nMy favorite colour is teal"), [
      ['age', '36', "I'm 36 years old"],
      ['works at', 'Initech', 'I work at Initech as well'],
      ['favourite colour', 'teal', 'My favorite colour is teal'],
    ]);
  });

  it('reads opinions, with their object in the attribute, and a negative one only once', () => {
    assert.deepEqual(read("I really like green tea but I don't like coffee. I'm allergic to peanuts."), [
      ['opinion of green tea', 'likes', 'I really like green tea'],
      ['opinion of coffee', 'dislikes', "I don't like coffee"],
      ['allergic to peanuts', 'yes', "I'm allergic to peanuts"],
    ]);
  });

  it('leaves out when and how long from a value', () => {
    assert.deepEqual(read("I moved to Berlin last week. I don't like green tea any more"), [
      ['lives in', 'Berlin', 'I moved to Berlin last week'],
      ['opinion of green tea', 'dislikes', "I don't like green tea any more"],
    ]);
  });

  it('counts offsets in characters, not UTF-16 units', () => {
    const text = '😀 Héllo. My city is Zürich.';
    const [fact] = factsIn(text);
    assert.deepEqual([...text].slice(fact!.start, fact!.end).join(''), 'My city is Zürich');
    assert.equal(fact!.start, 9);
  });

  it('reads nothing from questions, conditionals, talk about others, or sentences too long to be plain statements', () => {
    assert.deepEqual(read('Is my order 1234? If my name is Bob, then what? What do I like?'), []);
    assert.deepEqual(read('My question is simple. The weather is nice. She lives in Rome.'), []);
    assert.deepEqual(read(`My name is ${'a '.repeat(300)}`), []);
  });

  it('compares values folded', () => {
    assert.equal(valueKey(' Paris  France. '), 'paris france');
  });
});
