"""Stop words pylance 14.0.2 removes per ``language`` of an INVERTED index (``remove_stop_words=True``
without ``custom_stop_words``).

Data, derived from pylance itself: for each language, every word of the NLTK and stopwords-iso lists
(the sources of the lists pylance compiles in: Snowball's for most languages) was indexed alone, one per
row, with the whitespace tokenizer, lower case, no stemming and no folding; the words kept here are the
ones that produced no token. ``tests/search/test_fts_stop_words.py`` checks every list against pylance.
"""
from __future__ import annotations


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: language (lower case, as the index params name it) -> its stop words
STOP_WORDS: dict[str, frozenset[str]] = {
    "arabic": _words("""
ءَ آض آمينَ آناء آنفا آه آها آهاً آهٍ آهِ آي أبدا أبو أبٌ أجل أجمع أخبر أخذ أخو أخٌ أرى أصبح أصلا
أضحى أف أفٍّ أقبل أقل أكثر أل ألا أم أما أمام أمامك أمامكَ أمد أمس أمسى أمّا أن أنا أنت أنتم أنتما
أنتن أنتِ أنشأ أنى أنًّ أنّى أهلا أو أوشك أولئك أولاء أولالك أوه أوّهْ أى أي أيا أيضا أين أينما أيها
أيّ أيّان أُفٍّ إذ إذا إذاً إذما إذن إزاء إلا إلى إليك إليكم إليكما إليكن إليكنّ إليكَ إلَيْكَ إلّا
إما إمّا إن إنا إنما إنه إنَّ إى إي إياك إياكم إياكما إياكن إيانا إياه إياها إياهم إياهما إياهن إياي
إيه إيهٍ ابتدأ اخلولق ارتدّ استحال الآن الألاء الألى التي الذي الذين اللائي اللاتي اللتان اللتيا
اللتين اللذان اللذين اللواتي انبرى انقلب بؤسا بئس بات بخ بخٍ بس بسّ بضع بطآن بعد بعدا بعض بغتة بك
بكم بكما بكن بل بلى بما بماذا بمن بنا به بها بهم بهما بهن بي بيد بين بَسْ بَلْهَ تارة تانِ تانِك
تبدّل تجاه تحت تحوّل تخذ تعسا تفعلان تفعلون تفعلين تلقاء تلك تلكم تلكما ته تي تين تينك تَيْنِ تِه
تِي ثم ثمة ثمنمئة ثمَّ ثمّ ثمّة جعل جلل جميع جير حار حاشا حاي حبذا حبيب حتى حجا حدَث حرى حسب حقا
حمدا حمو حمٌ حيث حيثما حين حيَّ حَذارِ خاصة خال خبَّر خلا خلافا خلف دواليك دون دونك ذا ذات ذاك ذان
ذانك ذانِ ذلك ذلكم ذلكما ذلكن ذه ذو ذوا ذواتا ذواتي ذي ذيت ذين ذينك ذَيْنِ ذِه ذِي راح رجع رويدك ريث
رُبَّ زود ساء سبحان سحقا سرا سرعان سمعا سوف سوى شبه شتان شتانَ شرع شمال شَتَّانَ صار صباح صبرا صدقا
صراحة صهٍ صهْ ضحوة طاق طالما طرا طفق طَق ظلّ عاد عامة عجبا عدا عسى عل علق على عليك عليه علًّ عما عن
عند عوض عيانا عَدَسْ غالبا غدا غداة فإذا فإن فرادى فضلا فلان فمن فو فوق في فيم فيما فيه فيها قاطبة
قام قبل قد قطّ قلما كأن كأنما كأنّ كأي كأين كأيّ كأيّن كاد كان كثيرا كذا كذلك كرب كل كلا كلاهما كلتا
كلما كليكما كليهما كلَّا كلّما كم كما كن كى كي كيت كيف كيفما كِخ لئن لاسيما لبيك لدن لدى لعل لعلَّ
لعمر لك لكم لكما لكن لكنما لكنَّ لكي لما لمّا لنا له لها لهم لهما لهن لو لولا لوما لي ليت مادام ماذا
مازال مافتئ متى مثل مذ مرّة مساء مع معاذ مكانكم مكانكما مكانكنّ مكانَك مما ممن من منذ منه منها مه
مهما نا نبَّا نحن نحو نيف نَخْ نَّ هؤلاء ها هاتان هاته هاتي هاتين هاك هاكَ هاهنا هبّ هذا هذان هذه
هذي هذين هكذا هل هلا هلم هلّا هم هما هن هنا هناك هنالك هو هي هيا هيت هيهات هيّا هَؤلاء هَاتانِ
هَاتَيْنِ هَاتِه هَاتِي هَجْ هَذا هَذانِ هَذَيْنِ هَذِه هَذِي هَيْهات وإذ وإذا وإن وا والذي والذين
واهاً وراءَك ولكن ولو ومن وهو وَيْ وُشْكَانَ يا يفعلان يفعلون يمين ّأيّان
"""),
    "danish": _words("""
ad af alle alt anden at blev blive bliver da de dem den denne der deres det dette dig din disse dog
du efter eller en end er et for fra ham han hans har havde have hende hendes her hos hun hvad hvis
hvor i ind jeg jer jo kunne man mange med meget men mig min mine mit mod ned noget nogle nu når og
også om op os over på selv sig sin sine sit skal skulle som sådan thi til ud under var vi vil ville
vor være været
"""),
    "dutch": _words("""
aan al alles als altijd andere ben bij daar dan dat de der deze die dit doch doen door dus een eens
en er ge geweest haar had heb hebben heeft hem het hier hij hoe hun iemand iets ik in is ja je jij
jou jouw jullie kan kon kunnen maar me meer men met mij mijn moet na naar nog nu of om omdat onder
ons ook op over reeds te tegen toch toen tot u uit uw van veel voor want waren was wat we werd wezen
wie wij wil worden wordt zal ze zelf zich zij zijn zo zou
"""),
    "english": _words("""
a about above after again against all am an and any are as at be because been before being below
between both but by can did do does doing down during each few for from further had has have having
he he'd he'll he's her here hers herself him himself his how i i'd i'll i'm i've if in into is it
it'd it'll it's its itself just me more most my myself now of off on once only or other our ours
ourselves out over own re same she she'd she'll she's should should've so some such than that
that'll the their theirs them themselves then there these they they'd they'll they're they've this
those through to too under until up very was we we'd we'll we're we've were what when where which
while who whom why will with you you'd you'll you're you've your yours yourself yourselves
"""),
    "finnish": _words("""
että he heidän heidät heihin heille heillä heiltä heissä heistä heitä hän häneen hänelle hänellä
häneltä hänen hänessä hänestä hänet häntä itse ja johon joiden joihin joiksi joilla joille joilta
joina joissa joista joita joka joksi jolla jolle jolta jona jonka jos jossa josta jota jotka kanssa
keiden keihin keiksi keille keillä keiltä keinä keissä keistä keitä keneen keneksi kenelle kenellä
keneltä kenen kenenä kenessä kenestä kenet ketkä ketä koska kuin kuka kun me meidän meidät meihin
meille meillä meiltä meissä meistä meitä mihin miksi mikä mille millä miltä minkä minua minulla
minulle minulta minun minussa minusta minut minuun minä missä mistä mitkä mitä mukaan mutta ne
niiden niihin niiksi niille niillä niiltä niin niinä niissä niistä niitä noiden noihin noiksi noilla
noille noilta noin noina noissa noista noita nuo nyt näiden näihin näiksi näille näillä näiltä näinä
näissä näistä näitä nämä ole olemme olen olet olette oli olimme olin olisi olisimme olisin olisit
olisitte olisivat olit olitte olivat olla olleet ollut on ovat se sekä sen siihen siinä siitä siksi
sille sillä siltä sinua sinulla sinulle sinulta sinun sinussa sinusta sinut sinuun sinä sitä tai te
teidän teidät teihin teille teillä teiltä teissä teistä teitä tuo tuohon tuoksi tuolla tuolle tuolta
tuon tuona tuossa tuosta tuota tähän täksi tälle tällä tältä tämä tämän tänä tässä tästä tätä vaan
vai vaikka yli
"""),
    "french": _words("""
ai aie aient aies ait au aurai auraient aurais aurait aurez auriez aurions aurons auront aux avaient
avais avait avec avez aviez avons ayant ayez ayons c ce ceci cela celà ces cet cette d dans de des
du elle elles en es et eu eue eues eurent eus eusse eussent eusses eussiez eussions eut eux eûmes
eût eûtes furent fus fusse fussent fusses fussiez fussions fut fûmes fûtes ici il ils j je l la le
les leur leurs lui m ma mais me mes moi mon même nos notre nous on ont ou par pour qu que quel
quelle quelles quels qui s sa se sera serai seraient serais serait seras serez seriez serions serons
seront ses soi soient sois soit sont soyez soyons suis sur t ta te tes toi ton tu un une vos votre
vous y à étaient étais était étant étiez étions êtes
"""),
    "german": _words("""
aber alle allem allen aller alles als also am an ander andere anderem anderen anderer anderes anderm
andern anderr anders auch auf aus bei bin bis bist da damit dann das dass dasselbe dazu daß dein
deine deinem deinen deiner deines dem demselben den denn denselben der derer derselbe derselben des
desselben dessen dich die dies diese dieselbe dieselben diesem diesen dieser dieses dir doch dort du
durch ein eine einem einen einer eines einig einige einigem einigen einiger einiges einmal er es
etwas euch euer eure eurem euren eurer eures für gegen gewesen hab habe haben hat hatte hatten hier
hin hinter ich ihm ihn ihnen ihr ihre ihrem ihren ihrer ihres im in indem ins ist jede jedem jeden
jeder jedes jene jenem jenen jener jenes jetzt kann können könnte man manche manchem manchen mancher
manches mein meine meinem meinen meiner meines mich mir mit muss musste nach noch nun nur ob oder
sehr sein seine seinem seinen seiner seines selbst sich sie sind so solche solchem solchen solcher
solches soll sollte sondern sonst um und uns unse unsem unsen unser unsere unserem unseren unserer
unseres unses unter viel vom von vor war waren warst was weg weil weiter welche welchem welchen
welcher welches wenn werde werden wie wieder will wir wird wirst wo wollen wollte während würde
würden zu zum zur zwar zwischen über
"""),
    "greek": _words("""
αλλα αν αντι απο από αυτα αυτεσ αυτη αυτο αυτοι αυτοσ αυτουσ αυτων αἱ αἳ αἵ αὐτόσ αὐτὸς αὖ γάρ γα γε
για γοῦν γὰρ δέ δή δαί δαὶ δε διά διὰ δὲ δὴ εαν ειμαι ειμαστε ειναι εισαι ειστε εκεινα εκεινεσ
εκεινη εκεινο εκεινοι εκεινοσ εκεινουσ εκεινων ενω επ επι εἰ εἰμί εἰμὶ εἰς εἰσ εἴ εἴμι εἴτε η θα
ισωσ κ καί καίτοι καθ και κατ κατά κατα κατὰ καὶ κι κἀν κἂν μέν μα με μεθ μετ μετά μετα μετὰ μἐν μὲν
μὴν να ο οι ομωσ οπωσ οσο οτι οἱ οἳ οἷς οὓς οὕτω οὕτως οὕτωσ οὖν οὗ οὗτος οὗτοσ παρ παρά παρα παρὰ
περί περὶ ποια ποιεσ ποιο ποιοι ποιοσ ποιουσ ποιων ποτε που ποῦ προ προσ πρόσ πρὸ πρὸς πως πωσ σε
στη στην στο στον σόσ σύ σύν σὸς σὺ σὺν τά τήν τί τίς τίσ τα ταῖς τε την τησ τι τινα τις τισ το τοί
τοι τοιοῦτος τοιοῦτοσ τον τοτε του τούσ τοὺς τοῖς τοῦ των τό τόν τότε τὰ τὰς τὴν τὸ τὸν τῆς τῆσ τῇ
τῶν τῷ ωσ ἀλλά ἀλλὰ ἀπ ἀπό ἀπὸ ἀφ ἂν ἃ ἄλλος ἄλλοσ ἄν ἄρα ἅμα ἐάν ἐγώ ἐγὼ ἐκ ἐμόσ ἐμὸς ἐν ἐξ ἐπί
ἐπεὶ ἐπὶ ἐστι ἐφ ἐὰν ἑαυτοῦ ἔτι ἡ ἢ ἣ ἤ ἥ ἧς ἵνα ὁ ὃ ὃν ὃς ὅ ὅδε ὅθεν ὅπερ ὅς ὅσ ὅστις ὅστισ ὅτε ὅτι
ὑμόσ ὑπ ὑπέρ ὑπό ὑπὲρ ὑπὸ ὡς ὡσ ὥς ὥστε ὦ ᾧ
"""),
    "hungarian": _words("""
a abban ahhoz ahogy ahol aki akik akkor alatt amely amelyek amelyekben amelyeket amelyet amelynek
ami amikor amit amolyan amíg annak arra arról az azok azon azonban azt aztán azután azzal azért be
belül benne bár csak de e ebben eddig egy egyes egyik egyre egyéb ehhez ekkor el ellen elég elő
először előtt emilyen ennek erre ez ezek ezen ezt ezzel ezért fel felé hanem hiszen hogy hogyan ill
ill. illetve ilyen ilyenkor is ismét ison itt kell kellett keresztül ki kívül között közül legalább
legyen lehet lehetett lenne lenni lesz lett maga magát majd meg mellett mely melyek mert mi mikor
milyen minden mindenki mindent mindig mint mintha mit mivel miért most már más másik még míg nagyon
nekem neki néha néhány olyan ott pedig persze rá s saját sok sokat sokkal szemben szerint szinte
számára talán tehát tovább továbbá több ugyanis után utána vagy vagyis vagyok valaki valami valamint
való van vannak vele vissza viszont volna volt voltak voltam voltunk által általában át én éppen és
így össze úgy újra ő ők őket
"""),
    "italian": _words("""
a abbia abbiamo abbiano abbiate ad agl agli ai al all alla alle allo anche avemmo avendo avesse
avessero avessi avessimo aveste avesti avete aveva avevamo avevano avevate avevi avevo avrai avranno
avrebbe avrebbero avrei avremmo avremo avreste avresti avrete avrà avrò avuta avute avuti avuto c
che chi ci coi col come con contro cui da dagl dagli dai dal dall dalla dalle dallo degl degli dei
del dell della delle dello di dov dove e ebbe ebbero ebbi ed era erano eravamo eravate eri ero
essendo faccia facciamo facciano facciate faccio facemmo facendo facesse facessero facessi facessimo
faceste facesti faceva facevamo facevano facevate facevi facevo fai fanno farai faranno farebbe
farebbero farei faremmo faremo fareste faresti farete farà farò fece fecero feci fosse fossero fossi
fossimo foste fosti fu fui fummo furono gli ha hai hanno ho i il in io l la le lei li lo loro lui ma
mi mia mie miei mio ne negl negli nei nel nell nella nelle nello noi nostra nostre nostri nostro o
per perché più quale quanta quante quanti quanto quella quelle quelli quello questa queste questi
questo sarai saranno sarebbe sarebbero sarei saremmo saremo sareste saresti sarete sarà sarò se si
sia siamo siano siate siete sono sta stai stando stanno starai staranno starebbe starebbero starei
staremmo staremo stareste staresti starete starà starò stava stavamo stavano stavate stavi stavo
stemmo stesse stessero stessi stessimo steste stesti stette stettero stetti stia stiamo stiano
stiate sto su sua sue sugl sugli sui sul sull sulla sulle sullo suo suoi ti tra tu tua tue tuo tuoi
tutti tutto un una uno vi voi vostra vostre vostri vostro è
"""),
    "norwegian": _words("""
alle at av bare begge ble blei bli blir blitt både båe da de deg dei deim deira deires dem den denne
der dere deres det dette di din disse ditt du dykk dykkar då eg ein eit eller elles en enn er et
etter for fordi fra før ha hadde han hans har hennar henne hennes her hjå ho hoe honom hoss hossen
hun hva hvem hver hvilke hvilken hvis hvor hvordan hvorfor i inn inni ja jeg kan korleis korso kun
kunne kva kvar kvarhelst kven kvi kvifor man mange me med medan meg meget mellom men mi min mine
mitt mot mykje ned no noe noen noka noko nokon nokor nokre nå når og også om opp oss over på samme
seg selv si sia sidan siden sin sine sitt sjøl skal skulle slik so som somme somt så sånn til um upp
ut var vart varte ved vere verte vi vil ville vore vors vår være vært å
"""),
    "portuguese": _words("""
a ao aos aquela aquelas aquele aqueles aquilo as até com como da das de dela delas dele deles depois
do dos e ela elas ele eles em entre era eram essa essas esse esses esta estamos estas estava estavam
este esteja estejam estejamos estes esteve estive estivemos estiver estivera estiveram estiverem
estivermos estivesse estivessem estivéramos estivéssemos estou está estávamos estão eu foi fomos for
fora foram forem formos fosse fossem fui fôramos fôssemos haja hajam hajamos havemos hei houve
houvemos houver houvera houveram houverei houverem houveremos houveria houveriam houvermos houverá
houverão houveríamos houvesse houvessem houvéramos houvéssemos há hão isso isto já lhe lhes mais mas
me mesmo meu meus minha minhas muito na nas no nos nossa nossas nosso nossos num numa nós o os ou
para pela pelas pelo pelos por qual quando que quem se seja sejam sejamos serei seremos seria seriam
será serão seríamos seu seus somos sou sua suas são só também te tem temos tenha tenham tenhamos
tenho terei teremos teria teriam terá terão teríamos teu teus teve tinha tinham tive tivemos tiver
tivera tiveram tiverem tivermos tivesse tivessem tivéramos tivéssemos tu tua tuas tínhamos um uma
você vocês vos à às éramos
"""),
    "romanian": _words("""
a abia acea aceasta această aceea aceeasi acei aceia acel acela acelasi acele acelea acest acesta
aceste acestea acestei acestia acestui aceşti aceştia adica ai aia aibă aici al ala ale alea alt
alta altceva altcineva alte altfel alti altii altul am anume apoi ar are as asa asta astea astfel
asupra atare atat atata atatea atatia ati atit atita atitea atitia atunci au avea avem aveţi avut aş
aţi ba ca cam cand care careia carora caruia cat catre ce cea ceea cei ceilalti cel cele celor ceva
chiar ci cind cine cineva cit cite citeva citiva cu cui cum cumva cât câte câtva câţi cînd cît cîte
cîtva cîţi că căci cărei căror cărui către da daca dacă dar de deasupra deci decit deja desi despre
deşi din dintr dintr- dintre doar drept dupa după e ea ei el ele era eram este eu eşti fata fel fi
fie fiecare fii fim fiu fiţi foarte fost i ia iar ii il imi in inainte inapoi inca incit insa intr
intre isi iti la le li lor lui lângă lîngă m ma mai mea mei mele mereu meu mi mie mine mult multa
multe multi multă mulţi mă ne ni niste nişte noastre noastră noi nostri nostru noua noştri numai o
or ori oricare orice oricine oricum oricând oricât oricînd oricît oriunde pai parca pe pentru peste
pic pina poate pot prea prin printr- putini puţin puţina puţină până pînă sa sa-mi sa-ti sai sale
sau se si sint sintem spre sub sunt suntem sunteţi sus să săi său t ta tale te ti tine toata toate
toată tocmai tot toti totul totusi totuşi toţi tu tuturor tăi tău u ul ului un una unde undeva unei
uneia unele uneori unii unor unora unui unuia unul v va vi voastre voastră voi vom vor vostru vouă
voştri vreo vreun vă îi îl îmi în îţi ăla ălea ăsta ăstea ăştia şi ţi ţie
"""),
    "russian": _words("""
а без более больше будет будто бы был была были было быть в вам вас вдруг ведь во вот впрочем все
всегда всего всех всю вы где да даже для до другой его ее ей ему если есть еще её ж же за зачем
здесь и из или им иногда их к кажется как какая какой когда конечно кто куда ли лучше между меня мне
много может можно мой моя мы на над надо наконец нас него нее ней неё нибудь ним них но ну о об он
она они опять от перед по под после потом потому почти при про раз разве с сам свою себе себя
сегодня сейчас со совсем так такой там тебя тем теперь то тогда того тоже только том тот тут ты у уж
уже хорошо хоть чего чем через что чтоб чтобы чуть эти этого этой этом этот эту я
"""),
    "spanish": _words("""
a al algo algunas algunos ante antes como con contra cual cuando de del desde donde durante e el
ella ellas ellos en entre era erais eran eras eres es esa esas ese eso esos esta estaba estabais
estaban estabas estad estada estadas estado estados estamos estando estar estaremos estará estarán
estarás estaré estaréis estaría estaríais estaríamos estarían estarías estas este estemos esto estos
estoy estuve estuviera estuvierais estuvieran estuvieras estuvieron estuviese estuvieseis estuviesen
estuvieses estuvimos estuviste estuvisteis estuviéramos estuviésemos estuvo está estábamos estáis
están estás esté estéis estén estés fue fuera fuerais fueran fueras fueron fuese fueseis fuesen
fueses fui fuimos fuiste fuisteis fuéramos fuésemos ha habida habidas habido habidos habiendo
habremos habrá habrán habrás habré habréis habría habríais habríamos habrían habrías habéis había
habíais habíamos habían habías han has hasta hay haya hayamos hayan hayas hayáis he hemos hube
hubiera hubierais hubieran hubieras hubieron hubiese hubieseis hubiesen hubieses hubimos hubiste
hubisteis hubiéramos hubiésemos hubo la las le les lo los me mi mis mucho muchos muy más mí mía mías
mío míos nos nosotras nosotros nuestra nuestras nuestro nuestros o os otra otras otro otros para
pero poco por porque que quien quienes qué se sea seamos sean seas seremos será serán serás seré
seréis sería seríais seríamos serían serías seáis sido siendo sobre sois somos son soy su sus suya
suyas suyo suyos también tanto te tendremos tendrá tendrán tendrás tendré tendréis tendría tendríais
tendríamos tendrían tendrías tened tenemos tenga tengamos tengan tengas tengo tengáis tenida tenidas
tenido tenidos teniendo tenéis tenía teníais teníamos tenían tenías ti tiene tienen tienes todo
todos tu tus tuve tuviera tuvierais tuvieran tuvieras tuvieron tuviese tuvieseis tuviesen tuvieses
tuvimos tuviste tuvisteis tuviéramos tuviésemos tuvo tuya tuyas tuyo tuyos tú un una unos vosotras
vosotros vuestra vuestras vuestro vuestros y ya yo él éramos
"""),
    "swedish": _words("""
alla allt att av blev bli blir blivit de dem den denna deras dess dessa det detta dig din dina ditt
du där då efter eller en er era ert ett från för ha hade han hans har henne hennes hon honom hur här
i inom jag ju kan kunde man med mellan men mig min mina mitt mot mycket ni nu när någon något några
och om oss på samma sedan sig sin sina sitt själv skulle som så sådan sådana sådant till under upp
ut vad var vara varför varit varje vars vart vem vi vid vilka vilkas vilken vilket vår våra vårt än
är åt över
"""),
    "tamil": _words("""
அங்கு அங்கே அடுத்த அதனால் அதன் அதற்கு அதிக அதில் அது அதே அதை அந்த அந்தக் அந்தப் அல்லது அவன் அவரது
அவர் அவர்கள் அவள் அவை ஆகிய ஆகியோர் ஆகும் இங்கு இங்கே இதனால் இதனை இதன் இதற்கு இதில் இது இதை இந்த
இந்தக் இந்தத் இந்தப் இன்னும் இப்போது இருக்கும் இருந்த இருந்தது இருந்து இவர் இவை உன் உள்ள உள்ளது
உள்ளன எந்த என எனக் எனக்கு எனப்படும் எனவும் எனவே எனினும் எனும் என் என்ன என்னும் என்பது என்பதை என்ற
என்று என்றும் எல்லாம் ஏன் கொண்ட கொண்டு கொள்ள சற்று சிறு சில சேர்ந்த தனது தன் தவிர தான் நான் நாம் நீ
பற்றி பற்றிய பல பலரும் பல்வேறு பின் பின்னர் பிற பிறகு பெரும் போது போன்ற போல போல் மட்டுமே மட்டும்
மற்ற மற்றும் மிக மிகவும் மீது மேலும் மேல் யார் வந்த வந்து வரும் வரை வரையில் விட விட்டு வேண்டும் வேறு
"""),
    "turkish": _words("""
acaba ama aslında bazı belki biri birkaç birşey biz bu da de defa diye en eğer gibi hem hepsi her
ile ise için kez ki kim mu mü mı nasıl neden nerde nerede nereye niye niçin o sanki siz tüm ve veya
ya yani çünkü şey şu
"""),
}
