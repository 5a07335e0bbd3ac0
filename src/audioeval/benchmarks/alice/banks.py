"""Text banks of the built-in corpus, written for audioeval.

Two disjoint sets of wordings, as in ALICE: the *test* wordings play the role of Speech-IFEval's prompts
(used by evaluation items), the *demo* wordings are the rephrased banks used by demonstrations (at least ten
phrasings per task and per constraint). Phrases quoted in repeat-prompt and end-checker sentences sit
between the only pair of double quotes, which is what the alignment rewrite replaces.
"""

from __future__ import annotations

from audioeval.benchmarks.alice import constraints as C

EMOTIONS = ("neutral", "happy", "sad", "angry")

# --- spoken material --------------------------------------------------------------------------------------
EVAL_SENTENCES = (
    "The library closes early on Sunday evenings.",
    "Please bring a warm coat for the trip.",
    "My brother planted three apple trees last spring.",
    "The red bus stops outside the old bakery.",
    "We watched the storm from the kitchen window.",
    "She always drinks green tea before work.",
    "The children built a castle out of sand.",
    "Turn left after the second traffic light.",
    "Our neighbor fixed the fence this morning.",
    "The museum opens at nine tomorrow.",
    "He forgot his umbrella at the station.",
    "A small boat drifted slowly across the lake.",
    "The soup needs a little more salt.",
    "They painted the front door bright yellow.",
    "I found my keys under the sofa.",
    "The train was delayed by heavy snow.",
    "Her garden is full of tall sunflowers.",
    "We should leave before the traffic gets bad.",
    "The teacher handed out the new books.",
    "A black cat slept on the warm roof.",
    "Dinner will be ready in twenty minutes.",
    "The river flooded the lower fields again.",
    "He plays the piano every Friday night.",
    "Please close the window when you leave.",
    "The market sells fresh bread every morning.",
    "My phone battery died during the meeting.",
    "The old clock in the hall stopped working.",
    "They hiked to the top of the hill.",
    "The baby laughed at the funny puppet.",
    "We ran out of milk again today.",
    "The pilot announced a short delay.",
    "Her new bicycle has a silver bell.",
    "The kettle is boiling in the kitchen.",
    "He wrote a long letter to his grandmother.",
    "The park is quiet early in the morning.",
    "Someone left the garden gate open.",
    "The lights went out during the concert.",
    "I will call you after lunch.",
    "The farmer sold his last bag of potatoes.",
    "The waves crashed against the rocky shore.",
)

# Demonstration sentences: a small fixed set, like the twelve CREMA-D sentences ALICE's demos use.
DEMO_SENTENCES = (
    "The blue notebook is on the desk.",
    "I think we should wait a little longer.",
    "The shop on the corner has closed.",
    "Tell me when the film starts.",
    "We are going to the beach on Saturday.",
    "It is too late to change the plan now.",
    "The dog ran straight into the garden.",
    "I need to buy new shoes.",
    "The meeting moved to next Tuesday.",
    "Nobody answered the phone this afternoon.",
    "The coffee is getting cold.",
    "Let us take the early train.",
)

# Short lines for word counting (3 to 8 words), evaluation and demonstration sides.
COUNT_EVAL = (
    "Open the door.",
    "Birds sing at dawn.",
    "The bread is still warm.",
    "We walked home in the rain.",
    "Grandma baked a cake for everyone today.",
    "Bring the ladder to the back garden now.",
    "Stop right there.",
    "My sister likes cold lemonade.",
    "The horses ran across the open field.",
    "Rain fell all night long.",
    "Put the plates on the table.",
    "Everyone clapped when the band finally arrived.",
)
COUNT_DEMO = (
    "Wash your hands.",
    "The cup is empty.",
    "Leaves turn red in autumn.",
    "My uncle drives a green truck.",
    "We will paint the fence next week.",
    "The tall man opened the heavy wooden door.",
    "Keep the change.",
    "The candles burned very low tonight.",
)

# Lines for speaker-counting clips.
SPEAKER_LINES_EVAL = (
    "Good morning, everyone.",
    "The results are ready.",
    "I will check the schedule.",
    "Has anyone seen my glasses?",
    "Let us begin the meeting.",
    "That sounds like a plan.",
    "The printer is out of paper.",
    "We can finish this later.",
)
SPEAKER_LINES_DEMO = (
    "Hello there.",
    "Lunch is on the table.",
    "Where did you park the car?",
    "I agree with you.",
    "The window is stuck again.",
    "See you tomorrow.",
)

# Two-speaker exchanges for conversational fact retrieval: (question, reply with {x}, probe, answer
# options). Evaluation and demonstration dialogues are different.
DIALOGUES_EVAL = (
    (
        "What time does the train leave?",
        "It leaves at {x}.",
        "According to the conversation, what time does the train leave?",
        ("six o'clock", "seven o'clock", "eight o'clock", "nine o'clock"),
    ),
    (
        "Where are we meeting tonight?",
        "We are meeting at the {x}.",
        "Where will the two speakers meet?",
        ("cinema", "library", "station", "museum"),
    ),
    (
        "What color did you paint the kitchen?",
        "We painted it {x}.",
        "What color is the kitchen now, according to the dialogue?",
        ("green", "blue", "yellow", "white"),
    ),
)
DIALOGUES_DEMO = (
    (
        "How many tickets did you buy?",
        "I bought {x} tickets.",
        "How many tickets did the second speaker buy?",
        ("two", "three", "four", "five"),
    ),
    (
        "Which day is the dentist appointment?",
        "It is on {x}.",
        "On which day is the appointment?",
        ("Monday", "Tuesday", "Thursday", "Friday"),
    ),
    (
        "What did you order for lunch?",
        "I ordered {x}.",
        "What did the second speaker order for lunch?",
        ("soup", "pasta", "a salad", "a sandwich"),
    ),
)

NUMBER_WORDS = (
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
)

# --- task questions -----------------------------------------------------------------------------------------
SER_OPTIONS = 'Choose the answer from "neutral", "happy", "sad" or "angry".'
GR_OPTIONS = {
    "man": 'Choose the answer from "Man" or "Woman".',
    "male": 'Choose the answer from "Male" or "Female".',
}

TEST_TASK = {
    "asr": (
        "Please transcribe the speech in this recording.",
        "Write down exactly what the speaker says in this clip.",
        "What is being said in this audio? Provide the transcript.",
        "Produce a word-for-word transcript of the spoken content.",
        "Convert the speech in this clip into written text.",
    ),
    "ser": (
        "Which emotion does the speaker express in this recording? " + SER_OPTIONS,
        "How does the speaker feel, judging from their voice? " + SER_OPTIONS,
        "Identify the emotional state of the person speaking. " + SER_OPTIONS,
        "What emotion can you hear in the speaker's voice? " + SER_OPTIONS,
    ),
    "gr:man": (
        "Is the speaker a man or a woman? " + GR_OPTIONS["man"],
        "Who is talking in this clip, a man or a woman? " + GR_OPTIONS["man"],
    ),
    "gr:male": (
        "Is the voice in this recording male or female? " + GR_OPTIONS["male"],
        "What is the gender of the speaker? " + GR_OPTIONS["male"],
    ),
}

DEMO_TASK = {
    "asr": (
        "Transcribe the spoken words in this audio.",
        "Listen to the clip and write out what is said.",
        "Give a verbatim transcription of this recording.",
        "Type out the words the speaker utters.",
        "What exactly does the person in the recording say?",
        "Turn the speech you hear into text.",
        "Provide the written form of the spoken sentence.",
        "Write the sentence spoken in this audio clip.",
        "Report the speaker's words exactly as spoken.",
        "Render the speech in this clip as text, word for word.",
        "Capture the spoken content of this clip in writing.",
        "Note down everything the speaker says.",
    ),
    "ser": (
        'What mood does the speaker convey? Pick one of "neutral", "happy", "sad" or "angry".',
        'Listen to the tone of voice and name the emotion: "neutral", "happy", "sad" or "angry".',
        'Which feeling is carried by this voice? Select "neutral", "happy", "sad" or "angry".',
        'Classify the speaker\'s emotion as "neutral", "happy", "sad" or "angry".',
        'From the way the words are spoken, is the speaker "neutral", "happy", "sad" or "angry"?',
        'Tell me the emotion in this utterance; the options are "neutral", "happy", "sad" and "angry".',
        'Determine the emotional tone of the recording. Answer with "neutral", "happy", "sad" or "angry".',
        'What is the emotional state behind this voice? Choose among "neutral", "happy", "sad" and "angry".',
        'Judge how the speaker feels. Possible answers: "neutral", "happy", "sad", "angry".',
        'Recognize the emotion expressed in the clip, choosing "neutral", "happy", "sad" or "angry".',
        'Which of "neutral", "happy", "sad" or "angry" best describes the speaker\'s emotion?',
        'Name the speaker\'s emotion, using one of "neutral", "happy", "sad" or "angry".',
    ),
    "gr:man": (
        'Does this voice belong to a man or a woman? Answer "Man" or "Woman".',
        'Tell whether the speaker is a "Man" or a "Woman".',
        'Listen and decide: is this a "Man" or a "Woman" speaking?',
        'Identify who is talking, a "Man" or a "Woman".',
        'Would you say the speaker is a "Man" or a "Woman"?',
        'Is the person in this recording a "Man" or a "Woman"?',
    ),
    "gr:male": (
        'Classify the speaker\'s gender as "Male" or "Female".',
        'What gender is the voice in this clip? Reply "Male" or "Female".',
        'Determine whether the speaker is "Male" or "Female".',
        'Is the speaking voice "Male" or "Female"?',
        'Judging by the voice, is the speaker "Male" or "Female"?',
        'Recognize the gender of the talker: "Male" or "Female".',
    ),
}

# MMAU-style questions about synthesized speech: sub-category -> (MMAU-style category, test wordings,
# demo wordings). Fact retrieval takes its question from the dialogue.
MMAU_SUBCATEGORIES = {
    "Word Counting": "Reasoning",
    "Word Order": "Information Extraction",
    "Speaker Counting": "Reasoning",
    "Conversational Fact Retrieval": "Information Extraction",
}
MMAU_TEST_QUESTION = {
    "Word Counting": (
        "How many words does the speaker say in this clip?",
        "Count the words spoken in the recording. How many are there?",
        "What is the number of words in the spoken sentence?",
    ),
    "Word Order": (
        "Which of these words does the speaker say first?",
        "Of the following words, which one is spoken earliest in the clip?",
        "Which word comes first in the recording?",
    ),
    "Speaker Counting": (
        "How many different speakers can be heard in this recording?",
        "How many distinct voices take part in this clip?",
        "Count the number of different people speaking in the audio.",
    ),
}
MMAU_DEMO_QUESTION = {
    "Word Counting": (
        "How many words are spoken in this audio?",
        "Tell me how many words the speaker utters.",
        "What is the total word count of the utterance?",
        "Listen carefully and count the spoken words.",
        "How many separate words can you hear in the clip?",
        "Give the number of words in what is said.",
        "Count every word the voice says. How many are there?",
        "How long is the spoken sentence, in words?",
        "What number of words does the recording contain?",
        "Determine how many words are in the speech.",
    ),
    "Word Order": (
        "Which of the listed words is heard first?",
        "Among these words, which does the speaker say before the others?",
        "Which word appears earliest in the spoken sentence?",
        "Identify the word that is uttered first.",
        "Which of these comes first in the speech?",
        "Of the options, which word is spoken before the rest?",
        "Which listed word does the voice reach first?",
        "Which word from the list opens the sequence in the audio?",
        "Find the option that the speaker says earliest.",
        "Which of these words is pronounced first?",
    ),
    "Speaker Counting": (
        "How many people talk in this clip?",
        "Count the distinct speakers in the audio.",
        "How many different voices do you hear?",
        "What is the number of speakers in this recording?",
        "How many individuals are speaking here?",
        "Determine how many separate talkers the clip contains.",
        "How many unique speakers take a turn in this audio?",
        "Listen and count the speakers. How many are there?",
        "How many voices, each from a different person, can be heard?",
        "Tell me the number of different speakers in the clip.",
    ),
}
MMAU_DEMO_PROBE_PREFIX = (
    "",
    "Listen to the exchange. ",
    "Based on the dialogue, ",
    "From what the speakers say: ",
    "Using the conversation in the clip, ",
    "Pay attention to the reply. ",
    "According to the recording, ",
    "Considering both speakers, ",
    "After hearing the dialogue, ",
    "In this conversation, ",
)


def choose_clause(options: list[str] | tuple[str, ...]) -> str:
    quoted = [f'"{o}"' for o in options]
    return "Choose the answer from " + ", ".join(quoted[:-1]) + f" or {quoted[-1]}."


DEMO_CHOOSE_CLAUSES = (
    "Pick one of {opts}.",
    "Select from {opts}.",
    "The options are {opts}.",
    "Answer with one of {opts}.",
    "Choose among {opts}.",
)


def demo_choose_clause(options: list[str] | tuple[str, ...], index: int) -> str:
    opts = ", ".join(f'"{o}"' for o in options)
    return DEMO_CHOOSE_CLAUSES[index % len(DEMO_CHOOSE_CLAUSES)].format(opts=opts)


# --- constraint sentences ---------------------------------------------------------------------------------------
JSON_EXAMPLE_TAIL = 'For example:\n```JSON\n{\n  "answer": "..."\n}\n```'

TEST_CONSTRAINT = {
    C.CAPITAL: (
        "Your entire response must be in English and in capital letters only.",
        "Write the whole answer using uppercase letters only.",
        "Respond in English, with every letter capitalized.",
    ),
    C.LOWERCASE: (
        "Your entire response must be in English and in lowercase letters; capital letters are not allowed.",
        "Write the whole answer in lowercase letters only.",
        "Respond in English without using any capital letters.",
    ),
    C.JSON_FORMAT: (
        "Wrap your entire output in JSON format. You may use markdown code fences such as ```.",
        "Your whole response must be valid JSON. You can use markdown ticks such as ```.",
        "Give the answer as JSON only; markdown code fences like ``` are allowed.",
    ),
    C.QUOTATION: (
        "Enclose your whole response in double quotation marks.",
        "Wrap the entire answer with double quotes.",
        "Put double quotation marks around your complete reply.",
    ),
    C.TITLE: (
        "Your answer must contain a title wrapped in double angular brackets, such as <<my title>>.",
        "Include a title in double angle brackets, for example <<summary>>.",
        "Give your answer a title enclosed in double angular brackets, like <<answer>>.",
    ),
    C.REPEAT_PROMPT: (
        'Start your response with the exact words "{phrase}" and then give your answer.',
        'Begin your reply with "{phrase}", followed by the answer.',
        'Your response must open with the phrase "{phrase}" before the answer.',
    ),
    C.END_CHECKER: (
        'Finish your response with the exact phrase "{phrase}". No other words may follow it.',
        'End your reply with "{phrase}" and write nothing after it.',
        'The last words of your answer must be "{phrase}", with nothing following.',
    ),
}

DEMO_CONSTRAINT = {
    C.CAPITAL: (
        "Use only capital letters in your reply.",
        "Answer entirely in uppercase English.",
        "Every letter of your response should be a capital letter.",
        "Reply in English using block capitals throughout.",
        "Make sure the whole answer is written in upper case.",
        "Do not use any lowercase letters in the response.",
        "Format the entire reply in ALL CAPS.",
        "Your answer must appear in capital letters from start to finish.",
        "Write your response in English, all upper case.",
        "Capitalize every letter of the answer you give.",
    ),
    C.LOWERCASE: (
        "Use only lowercase letters in your reply.",
        "Answer entirely in lowercase English.",
        "No capital letters may appear in your response.",
        "Write everything in small letters.",
        "Make sure the whole answer is in lower case.",
        "Keep every letter of the reply lowercase.",
        "Your response should contain no uppercase letters at all.",
        "Reply in English, all lower case.",
        "Format the answer in lowercase only.",
        "Do not capitalize anything in your answer.",
    ),
    C.JSON_FORMAT: (
        "Return the answer as a JSON object.",
        "Format your full reply as JSON; code fences with ``` are fine.",
        "Present the response in valid JSON.",
        "Your output should be parseable as JSON.",
        "Give the result in JSON format only.",
        "Encode the whole answer as JSON.",
        "Reply with JSON and nothing else; you may wrap it in ```.",
        "Structure the response as a JSON object.",
        "Output the answer in JSON form.",
        "Make the entire reply a valid JSON document.",
    ),
    C.QUOTATION: (
        "Surround the entire reply with double quotes.",
        "Place your whole answer inside double quotation marks.",
        "Wrap everything you write in double quotes.",
        "Quote your complete response using double quotation marks.",
        "Your reply must begin and end with a double quote.",
        "Enclose the answer in a pair of double quotes.",
        "Put the whole response between double quotation marks.",
        "Write your answer inside double quotes.",
        "Frame the complete reply with double quotation marks.",
        "Make your response a quoted string in double quotes.",
    ),
    C.TITLE: (
        "Add a title in double angular brackets, such as <<title>>.",
        "Your reply needs a title wrapped like <<this>>.",
        "Include a heading enclosed in << and >>.",
        "Give the response a title inside double angle brackets.",
        "Wrap a title in double angular brackets, for instance <<result>>.",
        "Provide a title surrounded by << >>.",
        "Put a title in double angle brackets in your answer.",
        "Mark a title with double angular brackets, e.g. <<my answer>>.",
        "The response must contain a title like <<example>>.",
        "Label your answer with a title in double angular brackets.",
    ),
    C.REPEAT_PROMPT: (
        'Open your answer with the words "{phrase}".',
        'Begin with "{phrase}" and then answer.',
        'Your reply has to start with "{phrase}".',
        'Lead with the exact phrase "{phrase}" before giving the answer.',
        'Start by writing "{phrase}", then state your answer.',
        'The first words of your response must be "{phrase}".',
        'Preface the answer with "{phrase}".',
        'Kick off your reply with "{phrase}" and continue with the answer.',
        'Say "{phrase}" first, then give the answer.',
        'Put "{phrase}" at the very beginning of your response.',
    ),
    C.END_CHECKER: (
        'Close your answer with the words "{phrase}".',
        'End with "{phrase}" and nothing after it.',
        'Your reply has to finish with "{phrase}".',
        'Make "{phrase}" the final words of your response.',
        'Conclude the answer with the exact phrase "{phrase}".',
        'Finish by writing "{phrase}"; add nothing afterwards.',
        'The response must end in "{phrase}".',
        'Wrap up your reply with "{phrase}".',
        'Let the last words of your answer be "{phrase}".',
        'Sign off your response with "{phrase}".',
    ),
}

TEST_REPEAT_PHRASES = (
    "Answer:",
    "The answer is:",
    "My answer:",
    "Final answer:",
    "Based on the audio, the answer is",
    "Here is my response:",
    "After listening, I conclude:",
    "The final answer is:",
    "Response:",
    "In short:",
    "Having listened carefully, my answer is",
    "What I hear is:",
)
DEMO_REPEAT_PHRASES = (
    "After assessment, the answer is:",
    "Here is what I found:",
    "My conclusion:",
    "Considering the clip:",
    "Output:",
    "Listening result:",
    "Reply:",
    "From what I hear:",
    "The clip indicates:",
    "Verdict:",
)
TEST_END_PHRASES = (
    "Is there anything else I can help with?",
    "Let me know if you need more help.",
    "Hope this helps.",
    "That is my final answer.",
    "Thank you for listening.",
    "Feel free to ask another question.",
    "End of response.",
    "I am happy to assist further.",
    "That concludes my answer.",
    "Any other questions?",
    "Have a nice day.",
    "This is all I can tell from the audio.",
)
DEMO_END_PHRASES = (
    "Glad to help.",
    "Ask me if anything is unclear.",
    "Nothing more to add.",
    "That is everything.",
    "Happy listening.",
    "Done.",
    "I hope that answers it.",
    "Let me know what else you need.",
    "Good luck.",
    "Thanks for asking.",
)

TEST_COT = (
    "Think step by step.",
    "Explain your reasoning before giving the answer.",
    "Work through the problem one step at a time.",
    "Break the question down into simple steps.",
    "Reason it out carefully before you answer.",
    "Describe how you reach your answer, step by step.",
    "Show your thought process, then answer.",
    "Walk through your analysis before the final answer.",
    "Lay out the steps of your reasoning first.",
    "Think it through in stages and then respond.",
)
DEMO_COT = (
    "Reason step by step before answering.",
    "Go through your thinking one step at a time.",
    "Explain the steps that lead to your answer.",
    "Analyze the audio in stages, then answer.",
    "Describe your reasoning, then give the answer.",
    "Think aloud and work towards the answer.",
    "Justify your answer with a step-by-step analysis.",
    "Split the problem into steps and solve it.",
    "Before answering, explain what you notice and why.",
    "Show each step of your reasoning.",
    "Work it out gradually and state the answer at the end.",
    "First analyze, then conclude with the answer.",
)
